"""nmt: neural machine translation with attention."""
