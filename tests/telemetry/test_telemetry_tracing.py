"""Tracing facade: disabled mode allocates nothing; enabled mode reaches a real OTLP receiver."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry import trace

from cluster_sched.telemetry import spans as S
from cluster_sched.telemetry import tracing as tracing_module
from cluster_sched.telemetry.tracing import (
    ENDPOINT_ENV,
    Tracing,
    process_tracing,
    setup_tracing,
    traces_url,
)
from cluster_sched.testing.otlp_receiver import OtlpReceiver, ReceivedSpan


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as rx:
        yield rx


@pytest.fixture
def no_env_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENDPOINT_ENV, raising=False)


def by_name(spans: list[ReceivedSpan]) -> dict[str, ReceivedSpan]:
    return {s.name: s for s in spans}


@pytest.mark.usefixtures("no_env_endpoint")
def test_disabled_tracing_hands_out_shared_singletons() -> None:
    tracing = setup_tracing(None)

    assert tracing is setup_tracing("")
    assert not tracing.enabled
    cm1 = tracing.span(S.SCHEDULE_POD, {S.ATTR_POD_NAME: "p"})
    cm2 = tracing.span(S.SCHEDULING_CYCLE)
    assert cm1 is cm2
    with cm1 as span:
        assert span is trace.INVALID_SPAN
        assert not span.is_recording()
    assert tracing.start_span(S.BINDING_CYCLE) is trace.INVALID_SPAN
    assert tracing.current_context_carrier() == {}
    assert (
        tracing.link_from_carrier({"traceparent": "00-" + "1" * 32 + "-" + "2" * 16 + "-01"})
        is None
    )
    assert tracing.context_from_carrier({}) is None
    assert tracing.force_flush()
    tracing.shutdown()


@pytest.mark.usefixtures("no_env_endpoint")
def test_disabled_span_lets_exceptions_through() -> None:
    with pytest.raises(KeyError), setup_tracing(None).span(S.SCHEDULE_POD):
        raise KeyError("boom")


@pytest.mark.parametrize(
    ("endpoint", "url"),
    [
        ("http://jaeger:4318", "http://jaeger:4318/v1/traces"),
        ("http://jaeger:4318/", "http://jaeger:4318/v1/traces"),
        ("http://collector:4318/v1/traces", "http://collector:4318/v1/traces"),
    ],
    ids=["base", "trailing-slash", "full-url"],
)
def test_traces_url(endpoint: str, url: str) -> None:
    assert traces_url(endpoint) == url


@pytest.mark.parametrize("gzip", [False, True], ids=["plain", "gzip"])
def test_cycle_spans_nest_and_binding_links_to_its_cycle(
    receiver: OtlpReceiver, gzip: bool
) -> None:
    tracing = setup_tracing(receiver.endpoint, "test-coordinator", gzip=gzip)
    pod = {S.ATTR_POD_NAMESPACE: "default", S.ATTR_POD_NAME: "web-1", S.ATTR_POD_UID: "uid-1"}
    try:
        with tracing.span(S.SCHEDULE_POD, {**pod, S.ATTR_QUEUE_WAIT_MS: 3}) as root:
            with tracing.span(S.QUEUE_POP, {S.ATTR_CYCLE: 7}):
                pass
            with tracing.span(S.SCHEDULING_CYCLE, {S.ATTR_PROFILE: "default-scheduler"}) as cycle:
                for point in ("PreFilter", "Filter", "PostFilter", "PreScore", "Score"):
                    with tracing.span(S.phase_span(point), {S.ATTR_PHASE: S.phase_span(point)}):
                        if point == "Filter":
                            with tracing.span(S.SHARD_CALL, {S.ATTR_SHARD_ID: 0}):
                                pass
                            with tracing.span(
                                S.plugin_span("NodeResourcesFit"),
                                {
                                    S.ATTR_PLUGIN_NAME: "NodeResourcesFit",
                                    S.ATTR_EXTENSION_POINT: "filter",
                                },
                            ):
                                pass
                for point in ("NormalizeScore", "Reserve", "Permit"):
                    with tracing.span(S.phase_span(point)):
                        pass
                cycle.set_attribute(S.ATTR_RESULT, S.RESULT_SCHEDULED)
                cycle.set_attribute(S.ATTR_SELECTED_NODE, "node-3")
                carrier = tracing.current_context_carrier()
            root.set_attribute(S.ATTR_RESULT, S.RESULT_SCHEDULED)

        # The binding cycle starts later, elsewhere, from nothing but the carrier.
        assert "traceparent" in carrier
        with tracing.span(S.BINDING_CYCLE, pod, links=[tracing.link_from_carrier(carrier)]):
            for point in ("WaitOnPermit", "PreBind", "Bind", "PostBind"):
                with tracing.span(S.phase_span(point)):
                    pass
        assert tracing.force_flush()
    finally:
        tracing.shutdown()

    spans = receiver.wait_for(lambda got: any(s.name == "postBind" for s in got))
    named = by_name(spans)
    root_span, cycle_span, binding = (
        named["SchedulePod"],
        named["schedulingCycle"],
        named["bindingCycle"],
    )

    assert root_span.is_root
    assert root_span.service_name == "test-coordinator"
    assert root_span.scope == S.TRACER_NAME
    assert root_span.attributes == {**pod, S.ATTR_QUEUE_WAIT_MS: 3, S.ATTR_RESULT: "scheduled"}
    assert named["queuePop"].parent_span_id == root_span.span_id
    assert cycle_span.parent_span_id == root_span.span_id
    assert cycle_span.attributes[S.ATTR_SELECTED_NODE] == "node-3"
    for name in (
        "preFilter",
        "filter",
        "postFilter",
        "preScore",
        "score",
        "normalizeScore",
        "reserve",
        "permit",
    ):
        assert named[name].parent_span_id == cycle_span.span_id, name
        assert named[name].trace_id == root_span.trace_id
    assert named["shardCall"].parent_span_id == named["filter"].span_id
    plugin = named["plugin: NodeResourcesFit"]
    assert plugin.parent_span_id == named["filter"].span_id
    assert plugin.attributes[S.ATTR_EXTENSION_POINT] == "filter"

    assert binding.is_root
    assert binding.trace_id != root_span.trace_id
    assert binding.links == ((cycle_span.trace_id, cycle_span.span_id),)
    assert binding.attributes[S.ATTR_POD_UID] == "uid-1"
    for name in ("waitOnPermit", "preBind", "bind", "postBind"):
        assert named[name].parent_span_id == binding.span_id, name
    assert receiver.errors() == []


def test_exception_marks_span_error_and_propagates(receiver: OtlpReceiver) -> None:
    tracing = setup_tracing(receiver.endpoint)
    try:
        with pytest.raises(RuntimeError), tracing.span(S.SCHEDULING_CYCLE):
            raise RuntimeError("shard died")
        assert tracing.force_flush()
    finally:
        tracing.shutdown()
    (span,) = receiver.wait_for(lambda got: len(got) == 1)
    assert span.status_code == 2  # STATUS_CODE_ERROR


def test_manual_spans_and_explicit_parents(receiver: OtlpReceiver) -> None:
    tracing = setup_tracing(receiver.endpoint)
    try:
        root = tracing.start_span(S.SCHEDULE_POD)
        with tracing.use_span(root), tracing.span(S.QUEUE_POP):
            pass
        late = tracing.start_span(S.SELECT_HOST, parent=root)
        tracing.set_error(late, "no feasible node")
        tracing.end(late)
        remote = tracing.start_span(
            S.SHARD_RUN, parent=tracing.context_from_carrier(tracing.carrier_of(root))
        )
        tracing.end(remote)
        tracing.end(root)
        assert tracing.force_flush()
    finally:
        tracing.shutdown()
    named = by_name(receiver.wait_for(lambda got: len(got) == 4))
    root_id = named["SchedulePod"].span_id
    assert named["queuePop"].parent_span_id == root_id
    assert named["selectHost"].parent_span_id == root_id
    assert named["selectHost"].status_code == 2
    assert named["shardRun"].parent_span_id == root_id


def test_zero_sampling_records_nothing(receiver: OtlpReceiver) -> None:
    tracing = setup_tracing(receiver.endpoint, sampling_rate_per_million=0)
    try:
        with tracing.span(S.SCHEDULE_POD) as root, tracing.span(S.SCHEDULING_CYCLE) as child:
            assert not root.is_recording()
            assert not child.is_recording()
    finally:
        tracing.shutdown()


def test_bad_sampling_rate_is_rejected(receiver: OtlpReceiver) -> None:
    with pytest.raises(ValueError, match="sampling_rate_per_million"):
        setup_tracing(receiver.endpoint, sampling_rate_per_million=2_000_000)


def test_env_endpoint_is_honoured(receiver: OtlpReceiver, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENDPOINT_ENV, receiver.endpoint)
    tracing = setup_tracing(None)
    try:
        assert tracing.enabled
        with tracing.span(S.SCHEDULE_POD):
            pass
        assert tracing.force_flush()
    finally:
        tracing.shutdown()
    assert [s.name for s in receiver.wait_for(lambda got: len(got) == 1)] == ["SchedulePod"]


@pytest.mark.usefixtures("no_env_endpoint")
def test_process_tracing_is_set_up_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # Start from (and leave behind) whatever this process had: other tests may rely on it.
    monkeypatch.setattr(tracing_module, "_process_tracing", None)
    first = process_tracing()
    assert isinstance(first, Tracing)
    assert process_tracing("http://127.0.0.1:1") is first


@pytest.mark.parametrize(
    ("point", "name"),
    [
        ("PreFilter", "preFilter"),
        ("ScoreExtensionNormalize", "normalizeScore"),
        ("Custom", "Custom"),
    ],
    ids=["upstream", "alias", "unknown-passes-through"],
)
def test_phase_span_names(point: str, name: str) -> None:
    assert S.phase_span(point) == name
