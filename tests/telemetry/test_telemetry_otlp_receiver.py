"""The test OTLP receiver itself: wrong paths, malformed bodies, and JSON exports."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from cluster_sched.testing.otlp_receiver import OtlpReceiver


def post(url: str, body: bytes, content_type: str = "application/x-protobuf") -> int:
    request = urllib.request.Request(
        url, data=body, method="POST", headers={"Content-Type": content_type}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as err:
        return err.code


def test_rejects_other_paths_and_garbage() -> None:
    with OtlpReceiver() as rx:
        assert post(rx.endpoint + "/v1/metrics", b"") == 404
        assert post(rx.endpoint + "/v1/traces", b"\xff\xff not protobuf") == 400
        assert rx.spans() == []
        assert len(rx.errors()) == 1


def test_accepts_otlp_json() -> None:
    export = {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"stringValue": "svc"}}]
                },
                "scopeSpans": [
                    {
                        "scope": {"name": "s"},
                        "spans": [
                            {
                                "traceId": "AAAAAAAAAAAAAAAAAAAAAQ==",
                                "spanId": "AAAAAAAAAAI=",
                                "name": "SchedulePod",
                                "attributes": [
                                    {"key": "k8s.pod.name", "value": {"stringValue": "p"}},
                                    {"key": "n", "value": {"intValue": "3"}},
                                    {
                                        "key": "xs",
                                        "value": {"arrayValue": {"values": [{"boolValue": True}]}},
                                    },
                                ],
                            }
                        ],
                    }
                ],
            }
        ]
    }
    with OtlpReceiver() as rx:
        assert (
            post(rx.endpoint + "/v1/traces", json.dumps(export).encode(), "application/json") == 200
        )
        (span,) = rx.spans()
    assert span.name == "SchedulePod"
    assert span.trace_id == "00" * 15 + "01"
    assert span.span_id == "00" * 7 + "02"
    assert span.is_root
    assert span.service_name == "svc"
    assert span.attributes == {"k8s.pod.name": "p", "n": 3, "xs": (True,)}


def test_wait_for_times_out_with_what_arrived() -> None:
    with OtlpReceiver() as rx, pytest.raises(TimeoutError, match="received names"):
        rx.wait_for(lambda spans: bool(spans), timeout=0.01)


def test_endpoint_needs_a_started_receiver() -> None:
    with pytest.raises(RuntimeError, match="not started"):
        _ = OtlpReceiver().endpoint
