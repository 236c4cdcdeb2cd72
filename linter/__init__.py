"""linter: LibCST checks for transfer and ownership anti-patterns (see DESIGN.md)."""
