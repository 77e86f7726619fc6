"""The one exception type that means "the user can fix this": the CLI prints it and exits 2."""


class UserError(Exception):
    """Bad input (config, data, arguments, files): a message saying what and where, no traceback."""
