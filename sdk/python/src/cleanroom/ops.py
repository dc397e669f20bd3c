"""Server-wide calls that are not about one sandbox: list sandboxes (by label), snapshots,
warm pools, images and the attestation key. Mixed into :class:`cleanroom.Client`, so one
connection (and one set of credentials) serves them all:

    with Client() as c:
        for s in c.list_sandboxes(labels={"team": "ml"}):
            print(s.sandbox_id, s.labels)
        pool = c.create_pool("py", policy=Path("cleanroom.yaml"), min_ready=2)

On an :class:`cleanroom.AsyncClient` the same calls are coroutines (``await
c.list_snapshots()``): each builds its request and shapes its answer here, and the client's
``_unary`` runs it blocking or awaitable.

Records are the API's own messages (``cleanroom.v1.*_pb2``: ``Snapshot``, ``Pool``,
``PoolStats``, ``Image``...), whose field names carry their units (``size_bytes``,
``max_age_seconds``, ``avg_claim_latency_us``). Everything the server refuses raises the
typed error of its stable code; an option this SDK does not know raises ``unknown_option``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Mapping, Optional

from .options import Policy, checked, limits_message, policy_text
from .v1 import cleanroom_pb2 as pb
from .v1 import attestation_pb2 as apb
from .v1 import pools_pb2 as ppb
from .v1 import snapshots_pb2 as spb


@dataclass(frozen=True)
class PoolInfo:
    """A pool and its live statistics (``ready``, ``claimed``, ``warming``,
    ``claims_total``, ``avg_claim_latency_us``...)."""

    pool: "ppb.Pool"
    stats: "ppb.PoolStats"

    @property
    def id(self) -> str:
        return self.pool.pool_id


@dataclass(frozen=True)
class PublicKey:
    """The server's attestation key: SubjectPublicKeyInfo PEM and ``sha256:<hex>`` id."""

    pem: str
    key_id: str


class Operations:
    """The server-wide calls (see the module doc). Needs ``_unary(method, request, shape)``
    and the service stubs of :class:`cleanroom.Client` / :class:`cleanroom.AsyncClient`."""

    # ---- sandboxes ---------------------------------------------------------------------

    @checked
    def list_sandboxes(
        self,
        *,
        labels: Optional[Mapping[str, str]] = None,
        include_stopped: bool = False,
        only_own: bool = False,
    ) -> List["pb.Sandbox"]:
        """Sandboxes the caller may see (an admin: everyone's, unless ``only_own``) carrying
        every one of ``labels``; STOPPED ones only with ``include_stopped``."""
        return self._unary(
            self.sandboxes.list_sandboxes,
            pb.ListSandboxesRequest(
                labels=dict(labels or {}), include_stopped=include_stopped, only_own=only_own
            ),
            lambda r: list(r.sandboxes),
        )

    def get_sandbox(self, sandbox_id: str) -> "pb.Sandbox":
        """One sandbox (with live ``usage``); ``SandboxNotFoundError`` if not the caller's."""
        return self._unary(
            self.sandboxes.get_sandbox,
            pb.GetSandboxRequest(sandbox_id=sandbox_id),
            lambda r: r.sandbox,
        )

    # ---- snapshots ---------------------------------------------------------------------

    def list_snapshots(self) -> List["spb.Snapshot"]:
        """The caller's snapshots."""
        return self._unary(
            self.snapshots.list_snapshots, spb.ListSnapshotsRequest(), lambda r: list(r.snapshots)
        )

    def get_snapshot(self, snapshot_id: str) -> "spb.Snapshot":
        """One snapshot (``SnapshotNotFoundError`` if not the caller's)."""
        return self._unary(
            self.snapshots.get_snapshot,
            spb.GetSnapshotRequest(snapshot_id=snapshot_id),
            lambda r: r.snapshot,
        )

    def remove_snapshot(self, snapshot_id: str) -> "spb.Snapshot":
        """Delete a snapshot (``SnapshotInUseError`` while a sandbox restored from it lives)."""
        return self._unary(
            self.snapshots.remove_snapshot,
            spb.RemoveSnapshotRequest(snapshot_id=snapshot_id),
            lambda r: r.snapshot,
        )

    # ---- warm pools --------------------------------------------------------------------

    @checked
    def create_pool(
        self,
        name: str = "",
        *,
        policy: Policy = None,
        image: Optional[str] = None,
        limits=None,
        runtime: str = "",
        min_ready: int = 1,
        max_ready: int = 0,
        max_age_seconds: int = 0,
        reusable: bool = False,
        autoscale: bool = False,
        headroom: float = 1.5,
        interval_seconds: int = 10,
    ) -> "ppb.Pool":
        """A warm pool of READY sandboxes made from ``policy``/``image``/``limits`` (as
        ``cleanroom pool create``; ``max_ready`` 0 = ``min_ready``). A ``Sandbox.create``
        with the same template is served from it; :meth:`cleanroom.Sandbox.claim` takes one
        explicitly."""
        req = ppb.CreatePoolRequest(
            name=name,
            template=ppb.PoolTemplate(
                policy_yaml=policy_text(policy),
                image_ref=image or "",
                limits=limits_message(limits),
                runtime=runtime,
            ),
            min_ready=min_ready,
            max_ready=max_ready,
            max_age_seconds=max_age_seconds,
            reusable=reusable,
            autoscaling=ppb.Autoscaling(
                enabled=autoscale, headroom_factor=headroom, interval_seconds=interval_seconds
            ),
        )
        return self._unary(self.pools.create_pool, req, lambda r: r.pool)

    def list_pools(self) -> List[PoolInfo]:
        """The caller's pools with their statistics."""
        return self._unary(
            self.pools.list_pools,
            ppb.ListPoolsRequest(),
            lambda r: [PoolInfo(p, s) for p, s in zip(r.pools, r.stats)],
        )

    def pool_stats(self, pool_id: str) -> PoolInfo:
        """One pool with its statistics (``PoolNotFoundError`` if not the caller's)."""
        return self._unary(
            self.pools.get_pool_stats,
            ppb.GetPoolStatsRequest(pool_id=pool_id),
            lambda r: PoolInfo(r.pool, r.stats),
        )

    def destroy_pool(self, pool_id: str) -> None:
        """Remove a pool and the READY sandboxes it holds (claimed ones stay the claimers')."""
        return self._unary(
            self.pools.destroy_pool, ppb.DestroyPoolRequest(pool_id=pool_id), lambda r: None
        )

    # ---- images ------------------------------------------------------------------------

    def pull_image(self, image_ref: str) -> "pb.Image":
        """Pull, verify and unpack a digest-pinned image (no-op when cached)."""
        return self._unary(
            self.images.pull_image, pb.PullImageRequest(image_ref=image_ref), lambda r: r.image
        )

    def list_images(self) -> List["pb.Image"]:
        return self._unary(
            self.images.list_images, pb.ListImagesRequest(), lambda r: list(r.images)
        )

    def remove_image(self, digest: str) -> "pb.Image":
        """Remove a cached image (``ImageInUseError`` while a sandbox uses it)."""
        return self._unary(
            self.images.remove_image, pb.RemoveImageRequest(digest=digest), lambda r: r.image
        )

    # ---- attestation -------------------------------------------------------------------

    def attestation_public_key(self) -> PublicKey:
        """The key the server signs attestations with (check envelopes offline with it, e.g.
        ``cleanroom attestation verify``)."""
        return self._unary(
            self.attestations.get_attestation_public_key,
            apb.GetAttestationPublicKeyRequest(),
            lambda r: PublicKey(r.public_key_pem, r.key_id),
        )
