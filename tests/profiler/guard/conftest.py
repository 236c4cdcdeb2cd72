from .kit import clean_guard  # noqa: F401  (autouse for every guard test)
