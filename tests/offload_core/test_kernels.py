"""@kernel and RawKernel definitions, annotations and scalar casting."""

from __future__ import annotations

import numpy as np
import pytest

from offload_core import In, InOut, Out, Owned, RawKernel, kernel, offload
from offload_core.annotations import Access, ArraySpec, MapRequest
from offload_core.params import Param, cast_scalar


def test_annotations_subscript_with_a_dtype() -> None:
    spec = In[np.float32]
    assert spec == ArraySpec(Access.IN, np.dtype(np.float32))
    assert str(Out["int64"]) == "Out[int64]"
    assert str(InOut[np.dtype("f8")]) == "InOut[float64]"
    with pytest.raises(TypeError, match="In\\[...\\]: 'nope' is not a NumPy dtype"):
        In["nope"]
    with pytest.raises(TypeError, match="object dtypes cannot live on a device"):
        In[object]


def test_annotation_called_on_an_array_is_a_map_request() -> None:
    z = np.zeros(3)
    req = Out(z)
    assert isinstance(req, MapRequest) and req.array is z and req.access is Access.OUT
    with pytest.raises(TypeError, match="In\\(...\\) takes a NumPy array, got list"):
        In([1, 2])
    with pytest.raises(TypeError, match="Owned\\(...\\) cannot be mapped"):
        Owned(z)


def test_kernel_parameters_are_parsed_once() -> None:
    @kernel
    def k(a: In, b: Out[np.float32], c: InOut, d: Owned, n: int, x: float, z: complex, f: bool, m: np.int16, u) -> None:  # type: ignore[no-untyped-def]
        pass

    kinds = [(p.name, p.access, p.dtype, p.scalar) for p in k.params]
    assert kinds == [
        ("a", Access.IN, None, None),
        ("b", Access.OUT, np.dtype(np.float32), None),
        ("c", Access.INOUT, None, None),
        ("d", Access.OWNED, None, None),
        ("n", None, None, np.int64),
        ("x", None, None, np.float64),
        ("z", None, None, np.complex128),
        ("f", None, None, np.bool_),
        ("m", None, None, np.int16),
        ("u", None, None, None),
    ]
    assert repr(k).startswith("<PyKernel k('a' (In), 'b' (Out[float32])")


def test_string_annotations_resolve() -> None:
    namespace: dict[str, object] = {}
    exec(
        "from __future__ import annotations\n"
        "import numpy as np\n"
        "from offload_core import In, InOut, kernel\n"
        "@kernel\n"
        "def k(y: InOut[np.float32], x: In, a: float) -> None:\n"
        "    y += a * x\n",
        namespace,
    )
    k = namespace["k"]
    assert [str(p.describe()) for p in k.params] == ["'y' (InOut[float32])", "'x' (In)", "'a' (float64)"]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "source, message",
    [
        ("def k(*ys: In) -> None: pass", "parameter 'ys' is variadic positional; kernel parameters must be positional"),
        ("def k(y: In, *, a: float) -> None: pass", "parameter 'a' is keyword-only"),
        ("def k(y: np.ndarray) -> None: pass", "parameter 'y' is annotated ndarray; annotate arrays with In, Out, InOut or Owned"),
        ("def k(y: In = None) -> None: pass", "array parameter 'y' cannot have a default"),
        ("def k(y: In) -> float: pass", "a kernel returns nothing; write results through Out or InOut"),
        ("def k(s: str) -> None: pass", "parameter 's' is annotated str"),
        ("def k(y: Missing) -> None: pass", "cannot resolve an annotation"),
    ],
)
def test_bad_kernel_definitions_fail_at_decoration(source: str, message: str) -> None:
    namespace: dict[str, object] = {"np": np, "In": In}
    exec(source, namespace)
    with pytest.raises(TypeError) as exc:
        kernel(namespace["k"])  # type: ignore[arg-type]
    assert str(exc.value).startswith("kernel 'k': ") and message in str(exc.value)


def test_kernel_is_not_called_directly() -> None:
    @kernel
    def k(y: InOut) -> None:
        y += 1

    with pytest.raises(TypeError, match="kernel 'k' is launched with offload\\(k, ...\\)"):
        k(np.ones(2))
    y = np.ones(2)
    k.fn(y)  # the Python body stays reachable, for unit tests of the kernel itself
    assert np.all(y == 2)


def test_kernel_options() -> None:
    with pytest.raises(ValueError, match="alias_check must be 'bounds' or 'exact'"):
        kernel(alias_check="never")(lambda y: None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="@kernel decorates a function"):
        kernel(42)  # type: ignore[call-overload]


def test_default_scalars_fill_in() -> None:
    @kernel
    def k(y: InOut, a: float = 3.0) -> None:
        y += a

    y = np.zeros(2)
    offload(k, y)
    assert np.all(y == 3.0)


@pytest.mark.parametrize(
    "scalar, value, expected",
    [
        (np.int64, 3, np.int64(3)),
        (np.int32, np.int64(7), np.int32(7)),
        (np.uint8, 255, np.uint8(255)),
        (np.float64, 2, np.float64(2.0)),
        (np.float32, 0.1, np.float32(0.1)),
        (np.complex128, 1.5, np.complex128(1.5)),
        (np.bool_, True, np.bool_(True)),
        (None, 3, np.int64(3)),
        (None, 2.5, np.float64(2.5)),
        (None, 1j, np.complex128(1j)),
        (None, np.float32(1.5), np.float32(1.5)),
        (None, False, np.bool_(False)),
    ],
)
def test_scalars_cast_to_exact_numpy_types(scalar: type | None, value: object, expected: np.generic) -> None:
    got = cast_scalar(Param("s", scalar=scalar), value, "kernel 'k'")
    assert type(got) is type(expected) and got == expected


@pytest.mark.parametrize(
    "scalar, value, message",
    [
        (np.int64, 1.0, "takes an integer, got float 1.0"),
        (np.uint8, -1, "-1 is out of range [0, 255]"),
        (np.int64, True, "takes a number, got bool"),
        (np.bool_, 1, "takes a bool, got int"),
        (np.float64, 1j, "takes a real number, got complex 1j"),
        (np.float64, "1.0", "takes a scalar, got str"),
        (None, [1], "takes a scalar, got list"),
    ],
)
def test_lossy_or_wrong_scalars_are_refused(scalar: type | None, value: object, message: str) -> None:
    with pytest.raises(TypeError) as exc:
        cast_scalar(Param("s", scalar=scalar), value, "kernel 'k'")
    assert str(exc.value).startswith("kernel 'k': parameter 's'") and message in str(exc.value)


# ---------------------------------------------------------------- RawKernel
SRC = 'extern "C" __global__ void k(const double* x, double* y, int n) { }'


def test_raw_kernel_needs_typed_parameters() -> None:
    with pytest.raises(TypeError, match="array parameter 'x' needs a dtype matching its C pointer, e.g. In\\[np.float64\\]"):
        RawKernel(SRC, "k", params=[("x", In), ("y", InOut[np.float64]), ("n", np.int32)])
    with pytest.raises(TypeError, match="parameter 'n' is annotated None; annotate arrays with In"):
        RawKernel(SRC, "k", params=[("x", In[np.float64]), ("n", None)])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="parameter 'x' is listed twice"):
        RawKernel(SRC, "k", params=[("x", In[np.float64]), ("x", In[np.float64])])
    with pytest.raises(TypeError, match="source must be a non-empty string"):
        RawKernel("  ", "k", params=[])
    with pytest.raises(TypeError, match="the cpu= fallback takes 1 parameters, the kernel 3"):
        RawKernel(SRC, "k", params=[("x", In[np.float64]), ("y", InOut[np.float64]), ("n", np.int32)], cpu=lambda x: None)


def test_raw_kernel_int_is_int64_unless_typed() -> None:
    k = RawKernel(SRC, "k", params={"x": In[np.float64], "y": InOut[np.float64], "n": int})
    assert k.params[2].scalar is np.int64


def test_raw_kernel_launch_dimensions() -> None:
    k = RawKernel(SRC, "k", params={"x": In[np.float64], "y": InOut[np.float64], "n": np.int32},
                  grid=lambda x, y, n: ((n + 127) // 128,), block=(128,))
    assert k.launch_dims([None, None, 1000]) == ((8,), (128,))
    with pytest.raises(TypeError, match="grid must be 1 to 3 positive ints, got \\(0,\\)"):
        RawKernel(SRC, "k", params={"x": In[np.float64]}, grid=0)  # constant dimensions fail at definition
    bad = RawKernel(SRC, "k", params={"x": In[np.float64]}, grid=lambda x: (0,))
    with pytest.raises(TypeError, match="grid must be 1 to 3 positive ints, got \\(0,\\)"):
        bad.launch_dims([None])
