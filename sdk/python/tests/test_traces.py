"""W3C trace context (docs/traces.md): a client given a ``traceparent`` continues that
trace on the server — the executions it starts carry its trace id — and a malformed one is
refused before any call."""

import pytest

from cleanroom import Client, Sandbox

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
TP = f"00-{TRACE}-00f067aa0ba902b7-01"


def test_a_given_traceparent_is_the_trace_of_the_executions(host):
    with Client(host, traceparent=TP) as c, Sandbox.create(client=c) as s:
        h = s.start("true")
        assert h.info().trace_id == TRACE
        h.wait()


def test_without_one_each_execution_gets_a_trace_of_its_own(host):
    with Sandbox.create(host=host) as s:
        a, b = s.start("true"), s.start("true")
        ta, tb = a.info().trace_id, b.info().trace_id
        assert len(ta) == 32 and ta != tb and TRACE not in (ta, tb)
        a.wait()
        b.wait()


@pytest.mark.parametrize("bad", ["", "00-xyz", TP + "\n", TP + "\r\nx: y", TP.upper()])
def test_a_malformed_traceparent_is_refused(host, bad):
    with pytest.raises(ValueError):
        Client(host, traceparent=bad)
