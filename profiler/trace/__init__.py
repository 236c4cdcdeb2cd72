"""The trace room: the data model every other room reads, and its file format.

In dependency order, each module importing only those before it:
`records` (Site, Record, Meta, Link: plain values), `columns` (the records
as NumPy arrays), `tracefile` (the JSON document, validation, atomic
writes), `model` (`Run`, whose persistence is `tracefile`'s), `link` (link
profiles, the figures modelled costs use). Nothing here imports the
offload_core runtime, so a trace loads on any machine.
"""
