"""`nmt train`: the training loop (step, log, validate, save), validation, checkpoint keeping,
schedules, precision, several processes, exact resume."""
