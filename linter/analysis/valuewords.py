"""The words that tell a host value from a device value: attributes, methods, callables and annotations.

`values.DeviceValues` decides where an expression lives; these tables are
what it knows about the libraries' own names (an array's `.shape` is a host
value, `model(x)` is the step's output on the device, a NumPy function
returns a host array). They are data, kept apart so that the analysis reads
as rules and a new library word is a one-line change here.
"""

from __future__ import annotations

import re

import libcst as cst

MAYBE = "?"
# Attributes of a device array or of a module's output that are host values; every other attribute of a
# device value (`x.T`, `x.data`, `out.logits`, `features.relu2_2`) is taken to live where the value does.
HOST_ATTRS = frozenset({
    "shape", "dtype", "device", "ndim", "size", "nbytes", "itemsize", "strides", "is_cuda", "requires_grad",
    "training", "names", "layout", "is_leaf", "grad_fn", "flags", "is_sparse", "is_quantized", "is_meta",
    "__class__", "__name__", "__dict__", "mem", "data_ptr", "ptr", "sharding",
    "columns", "dtypes", "name", "names", "axes", "empty",  # data-frame metadata (cuDF)
    "kind", "char",  # a dtype's letters (`output.kind != "c"`)
    "placements", "device_mesh",  # a DTensor's layout
    "param_groups", "defaults",  # an optimizer's settings (`optimizer.param_groups[0]["lr"]`): Python numbers
})
HOST_METHODS = frozenset({
    "size", "dim", "ndimension", "numel", "nelement", "element_size", "data_ptr", "stride", "get_device",
    "is_contiguous", "is_floating_point", "is_complex", "type", "storage_offset", "__len__", "nbytes",
    "item", "tolist", "get", "numpy", "cpu", "copy_to_host", "__array__", "block_until_ready", "keys", "items",
})
# Methods whose results are host objects whatever they are called on or given: `load_state_dict`'s missing and
# unexpected key names, strings.
HOST_RESULTS = frozenset({"load_state_dict", "join", "format", "startswith", "endswith"})
# A checkpoint loader's result is a dict of state dicts and numbers (`ckpt["steps_run"]`), as `torch.load`'s is:
# `client.load_base_checkpoint()`, `checkpointer.load_checkpoint(model)`, `load_distributed_checkpoint(...)`.
CHECKPOINT_LOADER = re.compile(r"^load_(?:\w+_)?(?:checkpoint|ckpt)$")
# String methods: given a string (`s.split(",")`), the receiver is a string and so are the results
# (`t.split(2)` of a tensor gives tensors).
STR_METHODS = frozenset({"split", "rsplit", "replace", "strip", "lstrip", "rstrip", "partition", "rpartition"})
# How array-agnostic code names the array module it computes with: `xp = cp.get_array_module(x)`,
# `xp = device.xp` (SigPy), `xp = pxu.get_array_module(x)`. Such code exists to run on CuPy, so what `xp`
# computes is taken to be on the device.
ARRAY_MODULE_WORDS = frozenset({"get_array_module", "xp"})
# Variables array-agnostic code keeps its array module in (`xp = ndi.module()`, PyLops' `ncp = get_module(b)`).
ARRAY_MODULE_NAMES = frozenset({"xp", "ncp"})


def array_module_name(name: str) -> bool:
    """`xp`, `ncp`, and the same with a qualifier (`xp_storage`, `self._xp`): a variable holding an array module."""
    head = name.lstrip("_").split("_", 1)[0]
    return head in ARRAY_MODULE_NAMES


# Method prefixes of questions an object answers on the host (`instances.has("pred_boxes")`, `x.is_pinned()`).
PREDICATES = ("is_", "has")
# Functions of the array libraries whose answer is a Python bool about types, dtypes or memory bounds, not a device
# value (besides the `is_`/`has` predicates above).
HOST_PREDICATES = frozenset({"isscalar", "issubdtype", "iscomplexobj", "isrealobj", "isfortran", "shares_memory",
                             "may_share_memory", "isinstance", "issubclass", "callable", "can_cast", "result_type"})
# Methods of files and I/O handles (kvikio's CuFile, cuda.core streams) that take a device buffer and give back
# a future or a byte count: `fut = f.pread(buf); fut.get()` is no CuPy `.get()`.
IO_METHODS = frozenset({"read", "write", "pread", "pwrite", "raw_read", "raw_write", "read_async", "write_async",
                        "submit", "readinto", "send", "recv"})
ANNOTATIONS = {
    "cupy.ndarray": "cupy", "cupy._core.core.ndarray": "cupy",
    "torch.Tensor": "torch" + MAYBE, "torch.FloatTensor": "torch" + MAYBE, "torch.LongTensor": "torch" + MAYBE,
    "jax.Array": "jax", "jax.numpy.ndarray": "jax", "jax.numpy.DeviceArray": "jax",
    "numba.cuda.cudadrv.devicearray.DeviceNDArray": "numba",
}
# Callables whose outputs are the step's device values: models, networks, losses (see `_model_output`); not the
# functions that make, load or save a model (`create_model(args.model)` is given a config, not a batch). A private
# attribute names the same (`self._model(**batch)`, `self._loss_fn(logits, labels)`).
MODEL_NAME = re.compile(r"^_*(?!(?:create|build|get|load|make|init|initialize|setup|prepare|save|wrap|unwrap|freeze|"
                        r"resume|export|convert|print|count|log|summarize|restore|instantiate)_)"
                        r"(?:model|net|network|criterion|loss_fn|loss_func|lossfn|\w+_model|model_\w+|\w+_net|"
                        r"detector|classifier|encoder|decoder|generator|discriminator|backbone|ddp_model)$")
# torch functions that return something other than a tensor.
TORCH_NOT_TENSORS = frozenset({
    "device", "dtype", "finfo", "iinfo", "no_grad", "enable_grad", "inference_mode", "set_grad_enabled",
    "is_tensor", "is_floating_point", "is_complex", "get_default_dtype", "set_default_dtype", "manual_seed",
    "compile", "load", "save", "autocast", "set_printoptions", "numel", "is_grad_enabled", "get_rng_state",
    "use_deterministic_algorithms", "set_num_threads", "get_num_threads", "broadcast_shapes", "typename",
    "tensor", "as_tensor", "from_numpy", "asarray",  # without `device=`: built on the host
})
# What compiles a JAX step: a name bound to `jax.jit(f)`, `jax.pmap(f)` returns device arrays when called.
COMPILERS = frozenset({"jit", "pmap", "pjit", "xmap", "shard_map"})
JAX_STEP = re.compile(r"^(?:\w+_fn|\w+_step|p_\w+|model|apply_fn)$")
TENSOR_ATTRS = frozenset({"grad", "data", "weight", "bias"})
VARIABLE_ATTRS = frozenset({"array", "grad", "data"})  # a Chainer Variable's arrays
ARRAY_BUILTINS = frozenset({"builtins.abs", "builtins.pow", "builtins.sum", "builtins.min", "builtins.max"})
# Functions of these modules return host values whatever they are given.
HOST_MODULES = frozenset({"builtins", "numpy", "math", "time", "os", "sys", "logging", "json", "random", "itertools",
                          "functools", "operator", "collections", "re", "string", "pathlib", "warnings", "copy",
                          "pickle", "typing", "dataclasses", "inspect", "argparse",
                          "ctypes"})  # `err = lib.kernel(ctypes.cast(x.data.ptr, ...))`: a C function's int

# NumPy functions that make a NumPy array of what they are given (CuPy refuses them; JAX and torch download):
# every other NumPy function given a CuPy array hands the call to CuPy (`__array_ufunc__`, `__array_function__`).
NUMPY_CONVERSIONS = frozenset({"numpy.asarray", "numpy.array", "numpy.asanyarray", "numpy.ascontiguousarray",
                               "numpy.asfortranarray", "numpy.frombuffer", "numpy.fromiter", "numpy.copy"})


def strip(lib: str | None) -> str | None:
    """The library of a taint, certain or not."""
    return lib.rstrip(MAYBE) if lib else None


def stronger(a: str | None, b: str | None) -> str | None:
    """The more certain of two taints: a device library beats a maybe, a maybe beats nothing."""
    if a is None:
        return b
    if b is None or not a.endswith(MAYBE):
        return a
    return b if not b.endswith(MAYBE) else a


# JAX threads PRNG keys through builders and factories (`make_actor(actor_key, ...)`): a key argument does not
# make an unknown callee's result a device value.
RANDOM_KEY = re.compile(r"(?:^|_)(?:key|rng|prng_key|seed)s?$", re.I)


def random_key(arg: cst.Arg) -> bool:
    """An argument that is a JAX PRNG key by its name (`key`, `actor_key`, `rng`), or given as `key=...`/`rng=...`."""
    value = arg.value
    name = value.value if isinstance(value, cst.Name) else value.attr.value if isinstance(value, cst.Attribute) else ""
    keyword = arg.keyword.value if arg.keyword is not None else ""
    return bool(RANDOM_KEY.search(name) or RANDOM_KEY.search(keyword))


def string_or_host_result(func: cst.Attribute, call: cst.Call) -> bool:
    """`m.load_state_dict(sd)`, `", ".join(names)`, `s.split(",")`: a method call whose result is a host object."""
    name = func.attr.value
    if name in HOST_RESULTS or CHECKPOINT_LOADER.match(name):
        return True
    return name in STR_METHODS and bool(call.args) and isinstance(
        call.args[0].value, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString))
