"""Per-sandbox calls shared by :class:`cleanroom.Sandbox` and :class:`cleanroom.AsyncSandbox`:
pause/resume, snapshots, checkpoint, release to a pool, egress approvals, live egress rules,
exposed ports and attestation.

Each builds its request and shapes its answer once; the sandbox's client runs it (blocking on
a ``Client``, a coroutine on an ``AsyncClient``: ``await sbx.pause()``)."""

from __future__ import annotations

from typing import List, Optional, Sequence

from .events import Attestation, Decision, decide_request
from .v1 import approvals_pb2 as apb
from .v1 import attestation_pb2 as atpb
from .v1 import inbound_pb2 as ipb
from .v1 import network_pb2 as npb
from .v1 import pools_pb2 as ppb
from .v1 import snapshots_pb2 as spb


class SandboxCalls:
    """Needs ``self.id``, ``self.client`` and ``self._info`` (the last ``pb.Sandbox`` seen)."""

    def _keep(self, sandbox) -> None:
        self._info = sandbox

    def pause(self) -> None:
        """Freeze every process (status ``paused``); idempotent."""
        c = self.client
        return c._unary(
            c.snapshots.pause_sandbox,
            spb.PauseSandboxRequest(sandbox_id=self.id),
            lambda r: self._keep(r.sandbox),
        )

    def resume(self) -> None:
        """Thaw a paused sandbox (status ``ready``); idempotent."""
        c = self.client
        return c._unary(
            c.snapshots.resume_sandbox,
            spb.ResumeSandboxRequest(sandbox_id=self.id),
            lambda r: self._keep(r.sandbox),
        )

    def snapshot(self) -> "spb.Snapshot":
        """Capture the sandbox's writable state (frozen during the capture) → the
        ``Snapshot`` record (``snapshot_id``, ``size_bytes``, ``limits``...). Restore it with
        ``fork``; list/inspect/remove with the client's snapshot calls."""
        c = self.client
        return c._unary(
            c.snapshots.create_snapshot,
            spb.CreateSnapshotRequest(sandbox_id=self.id),
            lambda r: r.snapshot,
        )

    def checkpoint(self, leave_running: bool = False) -> "spb.Checkpoint":
        """Memory checkpoint (gvisor runtime, docs/checkpoints.md) → the ``Checkpoint``
        record (``checkpoint_id``, ``size_bytes``, ``content_digest``, ``dropped``...);
        restore or fork it with ``Sandbox.create(from_checkpoint=...)``. Without
        ``leave_running`` the sandbox is stopped once saved.
        ``BackendCapabilityMismatchError`` on a runtime without ``checkpoint_restore``."""
        c = self.client
        return c._unary(
            c.snapshots.checkpoint_sandbox,
            spb.CheckpointSandboxRequest(sandbox_id=self.id, leave_running=leave_running),
            lambda r: r.checkpoint,
        )

    def release(self, reusable: bool = False) -> None:
        """Give a sandbox claimed from a pool back (it is destroyed; its slot re-warmed)."""
        c = self.client
        return c._unary(
            c.pools.release_sandbox,
            ppb.ReleaseSandboxRequest(sandbox_id=self.id, reusable=reusable),
            lambda r: self._keep(r.sandbox),
        )

    def pending_egress(self) -> List["apb.EgressRequest"]:
        """Open egress requests (``request_id``, ``host``, ``port``, ``protocol``,
        ``expires_at``), oldest first."""
        c = self.client
        return c._unary(
            c.approvals.list_egress_requests,
            apb.ListEgressRequestsRequest(sandbox_id=self.id),
            lambda r: list(r.requests),
        )

    def decide_egress(self, request_id: str, allow: bool, *, remember: bool = False) -> None:
        """Answer one egress request; ``remember`` answers every later connection of the
        sandbox to that host:port the same way. ``ApprovalNotFoundError`` when it is no
        longer open (answered, timed out, never asked)."""
        c = self.client
        return c._unary(
            c.approvals.decide_egress,
            decide_request(self.id, request_id, Decision(allow, remember)),
            lambda r: None,
        )

    def update_network(
        self,
        *,
        allow: Sequence[str] = (),
        deny: Sequence[str] = (),
        reset: bool = False,
        cut: bool = False,
    ) -> "npb.UpdateSandboxNetworkResponse":
        """Change the running sandbox's egress rules (docs/network.md): ``allow`` entries
        ``HOST[:PORT]`` (no port: 80 and 443), ``deny`` hosts (every port), ``reset`` drops
        every live rule first; ``cut`` also ends established connections the new rules deny.
        New connections follow the new rules once this returns. → ``effective_rules_hash``,
        ``live_allow``, ``live_deny``, ``policy_hash`` (unchanged). A malformed host is
        ``PolicyInvalidError``; an allow a deny covers, ``PolicyConflictError``."""
        c = self.client
        return c._unary(
            c.network.update_sandbox_network,
            npb.UpdateSandboxNetworkRequest(
                sandbox_id=self.id, allow=list(allow), deny=list(deny), reset=reset, cut=cut
            ),
            lambda r: r,
        )

    def _url(self, exposure) -> str:
        from .transport import base_url

        # The server's own URL under a preview domain (serve --preview-domain).
        return exposure.url or base_url(self.client.target) + exposure.path

    def expose(self, port: int, ttl: Optional[int] = None) -> str:
        """Serve ``port`` of the sandbox at a URL of the Cleanroom server (docs/network.md
        "Inbound") → the URL, its signed token included: HTTP/1.1, HTTP/2, WebSocket and
        server-sent events reach the sandbox's loopback port until ``ttl`` seconds
        (default one hour) pass or :meth:`unexpose` removes it. Exposing an exposed port
        returns its URL (the server's own under ``serve --preview-domain``)."""
        c = self.client
        return c._unary(
            c.inbound.expose_sandbox_port,
            ipb.ExposeSandboxPortRequest(sandbox_id=self.id, port=port, ttl_seconds=ttl or 0),
            lambda r: self._url(r.exposure),
        )

    def get_url(self, port: int) -> str:
        """The URL of ``port``'s exposure (``ExposureNotFoundError`` when it is not exposed)."""
        c = self.client

        def pick(r):
            for e in r.exposures:
                if e.port == port:
                    return self._url(e)
            from .errors import ExposureNotFoundError

            raise ExposureNotFoundError(
                "exposure_not_found", f"port {port} of {self.id} is not exposed"
            )

        return c._unary(
            c.inbound.list_sandbox_exposures,
            ipb.ListSandboxExposuresRequest(sandbox_id=self.id),
            pick,
        )

    def unexpose(self, port_or_exposure) -> List[str]:
        """Remove the exposure of a port (or by its ``exp_…`` id): its URL stops working at
        once (``exposure_revoked``). → the removed exposure ids."""
        c = self.client
        return c._unary(
            c.inbound.unexpose_sandbox_port,
            ipb.UnexposeSandboxPortRequest(sandbox_id=self.id, target=str(port_or_exposure)),
            lambda r: [e.id for e in r.removed],
        )

    def attestation(self) -> Attestation:
        """The statement the server signed at create/claim (``envelope_json``, verifiable
        offline with the key of the client's ``attestation_public_key()``)."""
        c = self.client
        return c._unary(
            c.attestations.get_attestation,
            atpb.GetAttestationRequest(sandbox_id=self.id),
            Attestation.from_proto,
        )
