"""HTTPExtender against a real extender on 127.0.0.1: what it sends (upstream's wire
format), what it makes of the answers, and how it fails (timeouts, codes, errors)."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cluster_sched.api.objects import Pod
from cluster_sched.config.extenders import Extender, ExtenderManagedResource, ExtenderTLSConfig
from cluster_sched.framework.extender import ExtenderError, HTTPExtender, extenders_binding
from cluster_sched.framework.status import Code
from cluster_sched.testing.builders import make_node, make_pod
from cluster_sched.testing.extender_server import (
    UNRESOLVABLE,
    ExtenderServer,
    FakeExtender,
    only,
    prefer,
)

NODES = [make_node(n).capacity(cpu="4", memory="8Gi", pods=10).obj() for n in ("a", "b", "c")]
POD = make_pod("p").req(cpu="1").obj()


@pytest.fixture
def serve() -> Iterator[Any]:
    """serve(FakeExtender, **extender config) -> (HTTPExtender, FakeExtender)."""
    servers: list[ExtenderServer] = []
    clients: list[HTTPExtender] = []

    def start(fake: FakeExtender, **cfg: Any) -> tuple[HTTPExtender, FakeExtender]:
        server = ExtenderServer(fake).__enter__()
        servers.append(server)
        cfg.setdefault("filter_verb", "filter")
        client = HTTPExtender(Extender(url_prefix=server.url + "/scheduler", **cfg))
        clients.append(client)
        return client, fake

    yield start
    for c in clients:
        c.close()
    for s in servers:
        s.__exit__(None, None, None)


MEMORY = HTTPExtender(
    Extender("http://127.0.0.1:1", managed_resources=(ExtenderManagedResource("memory"),))
)


@pytest.mark.parametrize(
    ("extender", "pod", "want"),
    [
        pytest.param(HTTPExtender(Extender("http://127.0.0.1:1")), POD, True, id="no-managed"),
        pytest.param(MEMORY, make_pod("p").container("app").obj(), False, id="managed-empty"),
        pytest.param(MEMORY, make_pod("p").req(memory="0").obj(), True, id="requests"),
        pytest.param(MEMORY, make_pod("p").limits(memory="0").obj(), True, id="limits"),
        pytest.param(
            MEMORY,
            make_pod("p").container("app").init_req(memory="0").obj(),
            True,
            id="init-container",
        ),
    ],
)
def test_is_interested_as_upstream(extender: HTTPExtender, pod: Pod, want: bool) -> None:
    """upstream TestIsInterested."""
    assert extender.is_interested(pod) is want


def test_filter_sends_a_node_list_and_reads_the_kept_nodes(serve: Any) -> None:
    ext, fake = serve(FakeExtender(predicates=[only("a", "c")]))
    result = ext.filter(POD, NODES)
    assert result.names == ["a", "c"]
    assert result.failed == {"b": 'FakeExtender: node "b" failed'}
    (path, body), *_ = fake.calls
    assert path == "/scheduler/filter"
    assert body["NodeNames"] is None
    assert [n["metadata"]["name"] for n in body["Nodes"]["items"]] == ["a", "b", "c"]
    assert body["Pod"]["metadata"]["name"] == "p"


def test_node_cache_capable_extender_gets_names_only(serve: Any) -> None:
    ext, fake = serve(
        FakeExtender(predicates=[only("a"), lambda pod, n: UNRESOLVABLE if n == "c" else True]),
        node_cache_capable=True,
    )
    fake.node_cache_capable = True
    result = ext.filter(POD, NODES)
    assert result.names == ["a"]
    assert result.failed_and_unresolvable == {"c": 'FakeExtender: node "c" failed and unresolvable'}
    body = fake.calls[0][1]
    assert body["Nodes"] is None and body["NodeNames"] == ["a", "b", "c"]


def test_error_in_the_answer_is_the_error(serve: Any) -> None:
    ext, _ = serve(FakeExtender(filter_error="some error"))
    with pytest.raises(ExtenderError, match=r"^some error$"):
        ext.filter(POD, NODES)


def test_a_non_200_code_is_upstreams_message(serve: Any) -> None:
    ext, _ = serve(FakeExtender(status=500))
    with pytest.raises(
        ExtenderError, match=r"failed filter with extender at URL .*/filter, code 500"
    ):
        ext.filter(POD, NODES)


def test_a_claimed_node_that_was_not_sent_is_an_error(serve: Any) -> None:
    ext, _ = serve(FakeExtender(predicates=[only("a")], claim_extra=("z",)))
    with pytest.raises(ExtenderError, match='claims a filtered node "z" which is not found'):
        ext.filter(POD, NODES)


def test_a_slow_extender_fails_at_its_timeout(serve: Any) -> None:
    ext, _ = serve(FakeExtender(delay=3.0), http_timeout=0.2)
    with pytest.raises(ExtenderError, match="Post"):
        ext.filter(POD, NODES)


def test_an_unreachable_extender_is_an_extender_error() -> None:
    ext = HTTPExtender(Extender("http://127.0.0.1:1", filter_verb="filter", http_timeout=1.0))
    with pytest.raises(ExtenderError, match=r'Post "http://127\.0\.0\.1:1/filter"'):
        ext.filter(POD, NODES)


def test_connections_are_reused(serve: Any) -> None:
    ext, fake = serve(FakeExtender(predicates=[only("a")]))
    for _ in range(3):
        ext.filter(POD, NODES)
    assert len(fake.ports) == 3 and len(set(fake.ports)) == 1


def test_prioritize_answers_scores_and_weight(serve: Any) -> None:
    ext, fake = serve(
        FakeExtender(prioritizers=[(prefer("b"), 1)]), prioritize_verb="prioritize", weight=3
    )
    scores, weight = ext.prioritize(POD, NODES)
    assert dict(scores) == {"a": 1, "b": 10, "c": 1} and weight == 3
    assert fake.verbs() == ["prioritize"]


def test_bind_sends_upstreams_binding_args(serve: Any) -> None:
    bound: list[tuple[str, str, str, str]] = []
    ext, _ = serve(FakeExtender(binder=lambda *a: bound.append(a)), bind_verb="bind")
    pod = make_pod("p", "ns1").obj()
    ext.bind(pod, "b")
    assert bound == [("ns1", "p", pod.uid, "b")]


def test_preemption_sends_meta_victims_and_maps_uids_back(serve: Any) -> None:
    """upstream TestConvertToMetaVictims / TestConvertToVictims, over the wire."""
    v1 = make_pod("v1").priority(1).node("a").obj()
    v2 = make_pod("v2").priority(2).node("a").obj()
    v3 = make_pod("v3").priority(1).node("b").obj()
    keep = {"a": [v2.uid], "b": None}
    ext, fake = serve(
        FakeExtender(preempt_keep=lambda node, uids: keep[node]),
        preempt_verb="preempt",
        node_cache_capable=True,
    )
    on_node = {"a": [v1, v2], "b": [v3]}
    out = ext.process_preemption(POD, {"a": ([v1, v2], 1), "b": ([v3], 0)}, on_node.get)
    assert out == {"a": ([v2], 0)}
    sent = fake.calls[0][1]["NodeNameToMetaVictims"]
    assert sent == {
        "a": {"Pods": [{"UID": v1.uid}, {"UID": v2.uid}], "NumPDBViolations": 1},
        "b": {"Pods": [{"UID": v3.uid}], "NumPDBViolations": 0},
    }


def test_preemption_victim_not_on_the_node_is_an_error(serve: Any) -> None:
    v1 = make_pod("v1").node("a").obj()
    ext, _ = serve(FakeExtender(preempt_keep=lambda node, uids: ["ghost"]), preempt_verb="preempt")
    with pytest.raises(ExtenderError, match=r"claims to preempt pod \(UID: ghost\) on node: a"):
        ext.process_preemption(POD, {"a": ([v1], 0)}, {"a": [v1]}.get)


def test_extenders_binding_skips_a_failing_ignorable_binder(serve: Any) -> None:
    bad, _ = serve(FakeExtender(bind_error="down"), bind_verb="bind", ignorable=True)
    good, fake = serve(FakeExtender(), bind_verb="bind")
    assert extenders_binding([bad, good], POD, "a").is_success  # type: ignore[union-attr]
    assert fake.verbs() == ["bind"]
    status = extenders_binding([good, bad], POD, "a")
    assert status is not None and status.is_success
    failing = extenders_binding(
        [serve(FakeExtender(bind_error="no room"), bind_verb="bind")[0]], POD, "a"
    )
    assert failing is not None and failing.code == Code.ERROR and failing.reasons == ("no room",)
    assert extenders_binding([bad], POD, "a") is None  # left to the Bind plugins


# ---------------------------------------------------------------- HTTPS


@pytest.fixture
def https_server(tmp_path: Path) -> Iterator[tuple[str, Path, FakeExtender]]:
    """An HTTPS extender with a fresh self-signed certificate for localhost/127.0.0.1."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is needed to make a test certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            *(openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-keyout", str(key), "-out", str(cert), "-subj", "/CN=localhost"),
            *("-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"),
        ],
        check=True,
        capture_output=True,
    )
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    fake = FakeExtender(predicates=[only("a")])
    with ExtenderServer(fake, tls=ctx) as server:
        yield server.url, cert, fake


def test_enable_https_without_a_ca_does_not_verify(https_server: Any) -> None:
    """upstream makeTransport: enableHTTPS and no CA means an insecure transport."""
    url, _, fake = https_server
    ext = HTTPExtender(Extender(url, filter_verb="filter", enable_https=True))
    assert ext.filter(POD, NODES).names == ["a"]
    assert fake.verbs() == ["filter"]


def test_tls_config_ca_data_verifies_the_server(https_server: Any) -> None:
    url, cert, _ = https_server
    tls = ExtenderTLSConfig(ca_data=cert.read_bytes())
    ext = HTTPExtender(Extender(url, filter_verb="filter", tls_config=tls))
    assert ext.filter(POD, NODES).names == ["a"]


def test_an_unknown_server_certificate_is_refused(https_server: Any) -> None:
    url, _, fake = https_server
    ext = HTTPExtender(Extender(url, filter_verb="filter", tls_config=ExtenderTLSConfig()))
    with pytest.raises(ExtenderError, match="CERTIFICATE_VERIFY_FAILED"):
        ext.filter(POD, NODES)
    assert fake.calls == []
