"""The HTML report: one self-contained page (`page`), its pieces (`parts`) and its timeline's data (`timeline`).

The notebook's cell report is built from the same pieces, so there is one
HTML renderer, whatever shows it.
"""
