"""What a run gives back: reports in every format, fixes applied and written to files, rule explanations."""
