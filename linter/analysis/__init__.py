"""The semantic model of the code being linted: the syntax index, names, device values, loops, uses, kernels.

`project` holds what crosses files (kernel signatures) as plain records
that load without LibCST; every other module reads one file's tree.
`semantics.Semantics` composes the per-file answers the checks ask for.
"""
