"""A CUPTI capture becomes trace records in issue order, with the fields the detectors read."""

from __future__ import annotations

from pathlib import Path

from profiler.model import Record, Site
from profiler.sources.cupti.activity import ApiCall, Capture, Copy, Kernel, Memset
from profiler.sources.cupti.convert import convert, infer_sites

from .captures import T0, Builder


def test_records_follow_issue_order_with_times_from_the_start() -> None:
    b = Builder()
    b.h2d(3, 4096, host=0x1000)
    b.kernel(4, "scale")
    b.d2h(5, 4096, host=0x2000)
    out = convert(b.capture())
    kinds = [r.kind for r in out.records]
    assert kinds == ["h2d", "launch", "d2h", "sync"], "the blocking D2H adds the wait CUPTI does not report"
    up, launch, down, wait = out.records
    assert up.start_ns == b.copies[0].start - T0 and up.duration_ns == 1000
    assert (up.nbytes, up.pinned, up.param, up.array, up.fingerprint) == (4096, False, "pageable buffer", 0x1000, "f0")
    assert (launch.kernel, launch.launch, launch.site.line) == ("scale", 0, 4)
    assert (down.array, down.site.line, wait.site.line) == (0x2000, 5, 5)
    assert wait.start_ns + wait.duration_ns == down.start_ns and wait.duration_ns > 5000
    assert all(r.mode == "batched" for r in out.records)


def test_pinned_copies_and_mismatched_counts() -> None:
    b = Builder()
    b.h2d(3, 1 << 20, host=0x1000, kind="pinned")
    c = b.h2d(4, 8, host=0x3000)
    b.calls[c] = ApiCall(c, "cudaMemcpyAsync_v3020", "copy", b.calls[c].site, src=0x3000, count=16, fingerprint="x")
    pinned, odd = convert(b.capture()).records
    assert pinned.pinned and pinned.param == "pinned buffer"
    assert odd.array == 0x3000 and odd.fingerprint is None, "a digest of other bytes than the copy moved is dropped"


def test_explicit_sync_of_the_same_statement_replaces_the_implicit_one() -> None:
    b = Builder()
    b.kernel(3)
    b.d2h(4, 8, host=0x10, sync=False, instr=77)  # PyTorch .item(): async copy into pageable memory ...
    b.sync(4, instr=77)  # ... and a stream sync, one Python instruction
    b.d2h(5, 8, host=0x10, sync=True, instr=88)
    b.sync(6, instr=99)  # a later statement: the copy's own wait still counts
    kinds = [(r.kind, r.site.line) for r in convert(b.capture()).records]
    assert kinds == [("launch", 3), ("d2h", 4), ("sync", 4), ("d2h", 5), ("sync", 5), ("sync", 6)]


def test_pinned_async_d2h_does_not_block() -> None:
    b = Builder()
    b.d2h(4, 1 << 20, host=0x10, sync=False, kind="pinned")
    assert [r.kind for r in convert(b.capture()).records] == ["d2h"]


def test_device_copies_memsets_and_nccl_kernels_are_records_and_the_rest_is_counted() -> None:
    b = Builder()
    b.d2d(3, 1000)
    b.memset(4, 64)
    b.kernel(5, "ncclDevKernel_AllReduce_Sum_f32_RING_LL")
    b.kernel(6, "scale")
    b.sync(8, type="context")
    b.copies.append(Copy(b._call("cudaMemcpyPeerAsync", "copy", 9), 0, "p2p", "device", "device", 4096,
                         *b._span(100), 0, 0, 1))
    b.copies.append(Copy(b._call("cudaMemcpy", "copy", 10), 0, "h2h", "pageable", "pageable", 8, *b._span(100)))
    out = convert(b.capture())
    got = [(r.kind, r.nbytes, r.kernel, r.device, r.peer, r.site.line if r.site else None) for r in out.records]
    assert got == [("d2d", 1000, None, 0, 0, 3), ("memset", 64, None, 0, None, 4),
                   ("collective", 0, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 0, None, 5),
                   ("launch", 0, "scale", None, None, 6), ("sync", 0, None, None, None, 8),
                   ("d2d", 4096, None, 0, 1, 9)]
    assert [r.launch for r in out.records if r.kind == "launch"] == [0], "an NCCL kernel is no launch of the program"
    assert out.leftovers.device_copies == (1, 8) and out.leftovers.memsets == (0, 0)
    assert out.leftovers.describe() == "1 device-side copies (8 B)"
    assert convert(Builder().capture()).leftovers.describe() == ""


def test_records_without_a_call_keep_no_site_and_runtime_ids_are_followed() -> None:
    calls = {5: ApiCall(5, "cudaMemcpy_v3020", "copy", ("/a.py", 2, "f"), src=0xAB, count=4)}
    copy_by_runtime = Copy(900, 5, "h2d", "pageable", "device", 4, T0 + 10, T0 + 20)
    orphan = Kernel(7, "k", T0 + 30, T0 + 40)
    out = convert(Capture(T0, T0 + 100, calls, (copy_by_runtime,), (), (orphan,), ()))
    up, k = out.records
    assert up.site is not None and up.site.line == 2 and up.array == 0xAB
    assert k.site is None and k.launch == 0


def test_sites_carry_source_text_and_column(tmp_path: Path) -> None:
    script = tmp_path / "app.py"
    script.write_text("import x\nfor i in range(3):\n    d = cp.asarray(x)\n")
    b = Builder(file=str(script))
    b.h2d(3, 8, host=1)
    b.h2d(3, 8, host=1)
    first, second = convert(b.capture()).records
    assert (first.site.text, first.site.column, first.site.function) == ("d = cp.asarray(x)", 5, "main")
    assert first.site is second.site, "records of one line share one Site"


def test_kernel_names_are_demangled_when_a_demangler_is_given() -> None:
    b = Builder()
    b.kernel(3, "_ZN2at6native18elementwise_kernelEv")
    b.kernel(4, "cupy_add")
    asked: list[str] = []

    def demangle(names):  # type: ignore[no-untyped-def]
        asked.extend(names)
        return {"_ZN2at6native18elementwise_kernelEv": "at::native::elementwise_kernel()"}

    records = convert(b.capture(), demangle=demangle).records
    assert [r.kernel for r in records] == ["at::native::elementwise_kernel()", "cupy_add"]
    assert sorted(asked) == ["_ZN2at6native18elementwise_kernelEv", "cupy_add"]


def test_cxx_filt_demangles_when_installed() -> None:
    import pytest

    from profiler.sources.cupti.convert import cxx_demangler

    demangle = cxx_demangler()
    if demangle is None:
        pytest.skip("c++filt (binutils) is not installed")
    assert demangle(["_Z5scalePfi", "cupy_add"]) == {"_Z5scalePfi": "scale(float*, int)"}


def test_a_runtime_copy_takes_its_arguments_from_the_runtime_call() -> None:
    """cudaMemcpyAsync makes cuMemcpyHtoDAsync inside it; the tracer reads the outer call's parameter block only."""
    b = Builder()
    up = b.h2d(7, 4096, host=0x1000, fp="abc")  # the runtime call, arguments read
    b.corr += 1  # the driver call inside it: its site, no arguments
    b.calls[b.corr] = ApiCall(b.corr, "cuMemcpyHtoDAsync_v2", "copy", b.calls[up].site, b.calls[up].instr)
    copy = b.copies[-1]
    b.copies[-1] = Copy(b.corr, up, copy.direction, copy.src_kind, copy.dst_kind, copy.nbytes, copy.start, copy.end)
    b.kernel(8)
    (record, launch) = convert(b.capture()).records
    assert (record.kind, record.array, record.fingerprint, record.site.line) == ("h2d", 0x1000, "abc", 7)
    assert launch.kind == "launch"


def test_sampled_launch_sites_are_lent_to_unseen_launches_of_the_same_kernel() -> None:
    a, b = Site("/w/t.py", 4, "step"), Site("/w/t.py", 9, "step")
    kernels = ["gemm", "gemm", "relu", "gemm", "gemm", "gemm"]
    sites: list[Site | None] = [None, a, None, None, b, None]
    assert infer_sites(kernels, sites) == 3
    assert sites == [a, a, None, a, b, b], "the latest sample before, else the first after; a kernel never sampled keeps none"


def test_memsets_without_a_site_are_not_given_one() -> None:
    """Only launch sites are sampled: a memset without a site had no user frame, and keeps none."""
    b = Builder()
    b.memset(5, 256)
    b.memsets.append(Memset(999, 256, "device", *b._span(100)))  # no call heard for it
    b.kernel(7, "k")
    out = convert(b.capture(), infer_launch_sites=True)
    assert [(r.kind, r.site.line if r.site else None) for r in out.records] == [
        ("memset", 5), ("launch", 7), ("memset", None)]
    assert out.inferred_sites == 0


def test_a_record_naming_a_call_of_another_kind_is_not_charged_to_its_line() -> None:
    """CUPTI's record of an unheard call carries a heard call's correlation id: a copy never takes a launch's line."""
    b = Builder()
    forward = b.kernel(50, "lstm")
    b.unheard_d2h(forward)
    b.unheard_d2h(forward)
    b.d2h(19, 4, host=0x10)
    out = convert(b.capture())
    downs = [r for r in out.records if r.kind == "d2h"]
    assert [r.site.line if r.site else None for r in downs] == [None, None, 19]
    assert [r.site.line for r in out.records if r.kind == "launch"] == [50]
    assert out.unheard == (("d2h", 2),)
    assert out.unheard_text().startswith("CUPTI did not call back for the calls that made 2 d2h record(s)")
    assert convert(Builder().capture()).unheard_text() == ""


def test_a_cuda_graph_launch_issues_copies_and_a_copy_call_may_run_a_kernel() -> None:
    b = Builder()
    graph = b._call("cudaGraphLaunch_v10000", "launch", 7)
    b.copies.append(Copy(graph, 0, "d2d", "device", "device", 64, *b._span(100)))
    strided = b._call("cudaMemcpy2DAsync_v3020", "copy", 8)
    b.kernels.append(Kernel(strided, "copy_kernel", *b._span(100)))
    synced = b.sync(9)
    b.kernels.append(Kernel(synced, "stale", *b._span(100)))  # no sync issues a kernel: its own call went unheard
    out = convert(b.capture())
    assert [(r.kind, r.site.line if r.site else None) for r in out.records] == [
        ("d2d", 7), ("launch", 8), ("sync", 9), ("launch", None)]
    assert out.unheard == (("launch", 1),)


def test_records_are_columns_built_on_demand_unless_a_value_does_not_fit() -> None:
    from profiler.trace.columns import RecordTable

    b = Builder()
    b.h2d(3, 64, host=0x1000)
    out = convert(b.capture())
    assert isinstance(out.records, RecordTable) and out.records.columns.kind_mask("h2d").sum() == 1
    big = Builder()
    big.h2d(3, 64, host=1 << 64)  # not a pointer any 64-bit process has; the columns cannot hold it
    (up,) = convert(big.capture()).records
    assert up.array == 1 << 64


def test_the_recorders_run_keeps_the_records_unbuilt() -> None:
    """`offload-prof run` writes the trace from the columns: no Record is made unless someone reads one."""
    from profiler.sources.cupti.recorder import CuptiRecorder
    from profiler.trace.columns import RecordTable

    b = Builder()
    b.kernel(3, "k")
    b.d2h(4, 8, host=0x10)
    recorder = CuptiRecorder()
    recorder._tracer, recorder._capture = object(), b.capture()  # type: ignore[assignment]  # as after a recording
    run = recorder.run()
    assert isinstance(run.records, RecordTable) and run.records._built is None
    assert [r.kind for r in run.records] == ["launch", "d2h", "sync"]
