"""Classes the linter missed on unseen-16 (issue 31), one small self-written example each.

Unseen-16's CuPy repository computes through its own array module: a
package-level `xp`, NumPy or CuPy as the configuration says, imported
by every module (`from pkg.numeric import xp`) instead of CuPy itself.
The linter took such files for host code and caught none of its 46 costs.
The examples keep that shape without any of the repository's code; each
failed on the commit before the classes were built (ef027e7), and the
silent cases guard the false positives (a library imported as `xp`, a
download into a host array, positions made on the device).
"""

from __future__ import annotations

from ..kit import codes

PROJECT_XP = "import numpy as np\nfrom mypkg.numeric import xp\n"


def test_a_project_array_module_makes_its_arrays_cupy_and_a_host_mask_a_sync() -> None:
    code = PROJECT_XP + """
def evaluate(v, ells, n_ell):
    v = xp.asarray(v)
    out = xp.zeros((v.shape[0], n_ell))
    for ell in range(n_ell):
        ind = ells == ell
        out[:, ell] = v[:, ind].sum(axis=1)
    return xp.asnumpy(out)
"""
    assert codes(code, select=["OFF104"]) == [("OFF104", 9, 23)]


def test_the_host_mask_finding_says_the_mask_is_uploaded_and_counted() -> None:
    from ..kit import lint

    code = PROJECT_XP + """
def evaluate(v, ells, n_ell):
    v = xp.asarray(v)
    for ell in range(n_ell):
        v[:, ells == ell] = 0
    return v
"""
    (finding,) = lint(code, select=["OFF104"]).findings
    assert "host mask `ells == ell` (uploaded, then counted)" in finding.message
    assert "cupy.asarray(numpy.flatnonzero(mask))" in finding.message


def test_a_library_imported_as_xp_is_that_library() -> None:
    code = """
import numpy as xp

def evaluate(v, ells, n_ell):
    v = xp.asarray(v)
    for ell in range(n_ell):
        v[:, ells == ell] = 0
    return v
"""
    assert codes(code, select=["OFF104"]) == []


def test_a_download_through_the_array_module_is_a_host_array() -> None:
    """`xp.asnumpy(d)` gives a host array: the mask made from it is no device read, nor is storing it."""
    code = PROJECT_XP + """
def align(dots, best, n_shifts):
    dots = xp.asarray(dots)
    found = np.zeros(best.shape)
    for k in range(n_shifts):
        current = xp.asnumpy(dots[k])
        better = current > best
        found[better] = current[better]
    return found
"""
    assert codes(code, select=["OFF104", "OFF301", "OFF302"]) == []


def test_a_mask_a_class_keeps_indexes_a_device_array_in_a_per_batch_method() -> None:
    code = PROJECT_XP + """
class Transform:
    def __init__(self, n):
        self.radial_mask = np.hypot(*np.mgrid[-n:n, -n:n]) > n

    def apply(self, imgs):
        imgs = xp.array(imgs)
        imgs[:, self.radial_mask] = 0
        return imgs.sum()


def run(n, batches):
    transform = Transform(n)
    for batch in batches:
        transform.apply(batch)
"""
    assert codes(code, select=["OFF104"]) == [("OFF104", 10, 9)]


def test_numpy_positions_indexing_a_cupy_array_per_iteration_are_uploaded() -> None:
    code = PROJECT_XP + """
def evaluate(v, k_max, n_ell):
    v = xp.asarray(v)
    out = xp.zeros((v.shape[0], n_ell))
    ind = 0
    for ell in range(n_ell):
        idx_pos = ind + np.arange(k_max[ell], dtype=int)
        out[:, ell] = v[:, idx_pos].sum(axis=1)
        ind += k_max[ell]
    return out
"""
    assert codes(code, select=["OFF108"]) == [("OFF108", 10, 28)]


def test_positions_made_on_the_device_or_drawn_at_random_are_not_said_as_numpy_positions() -> None:
    code = PROJECT_XP + """
def evaluate(v, k_max, n_ell):
    v = xp.asarray(v)
    for ell in range(n_ell):
        idx = xp.arange(k_max[ell])
        v[:, idx] *= 2
    return v


def fit(data, n_epochs, batch):
    data = xp.asarray(data)
    order = np.arange(data.shape[0])
    for epoch in range(n_epochs):
        np.random.shuffle(order)
        for start in range(0, len(order), batch):
            rows = order[start:start + batch]
            data[rows] = data[rows] * 0.5
"""
    assert [c for c, *_ in codes(code, select=["OFF107", "OFF108"])] == ["OFF107"]


def test_numpy_positions_of_a_host_array_are_no_upload() -> None:
    code = """
import numpy as np

def evaluate(v, k_max, n_ell):
    out = np.zeros(n_ell)
    for ell in range(n_ell):
        out[ell] = v[np.arange(k_max[ell])].sum()
    return out
"""
    assert codes(code, select=["OFF108"]) == []
