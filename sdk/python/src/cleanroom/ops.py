"""Server-wide calls that are not about one sandbox: list sandboxes (by label), snapshots,
warm pools, named volumes, images and the attestation key. Mixed into :class:`cleanroom.Client`, so one
connection (and one set of credentials) serves them all:

    with Client() as c:
        for s in c.list_sandboxes(labels={"team": "ml"}):
            print(s.sandbox_id, s.labels)
        pool = c.create_pool("py", policy=Path("cleanroom.yaml"), min_ready=2)

On an :class:`cleanroom.AsyncClient` the same calls are coroutines (``await
c.list_snapshots()``): each builds its request and shapes its answer here, and the client's
``_unary`` runs it blocking or awaitable.

Records are the API's own messages (``cleanroom.v1.*_pb2``: ``Snapshot``, ``Pool``,
``PoolStats``, ``Volume``, ``Image``...), whose field names carry their units (``size_bytes``,
``max_age_seconds``, ``avg_claim_latency_us``). Everything the server refuses raises the
typed error of its stable code; an option this SDK does not know raises ``unknown_option``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Mapping, Optional

from . import errors
from .options import MIB, Policy, checked, limits_message, policy_text
from .v1 import cleanroom_pb2 as pb
from .v1 import attestation_pb2 as apb
from .v1 import pools_pb2 as ppb
from .v1 import snapshots_pb2 as spb
from .v1 import volumes_pb2 as vpb


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

    # ---- named volumes -----------------------------------------------------------------

    @checked
    def create_volume(
        self, name: str, *, size_mib: Optional[int] = None, size_bytes: Optional[int] = None
    ) -> "vpb.Volume":
        """A named volume of the caller (docs/volumes.md; ``cleanroom volume create``):
        ``size_mib`` or ``size_bytes`` is its filesystem's size, 16 MiB to 1 TiB (neither:
        the server's default, 1 GiB). ``VolumeExistsError`` if the caller has one so named.
        Mount it with ``Sandbox.create(volumes=["NAME:/path[:ro]"])``."""
        req = vpb.CreateVolumeRequest(name=name, size_bytes=_volume_size(size_mib, size_bytes))
        return self._unary(self.volumes.create_volume, req, lambda r: r.volume)

    def list_volumes(self) -> List["vpb.Volume"]:
        """The caller's volumes (an admin: everyone's), with the sandboxes mounting each."""
        return self._unary(
            self.volumes.list_volumes, vpb.ListVolumesRequest(), lambda r: list(r.volumes)
        )

    def get_volume(self, volume: str) -> "vpb.Volume":
        """One volume by name or ``vol_…`` id (``VolumeNotFoundError`` if not the caller's)."""
        return self._unary(
            self.volumes.get_volume, vpb.GetVolumeRequest(volume=volume), lambda r: r.volume
        )

    def remove_volume(self, volume: str) -> "vpb.Volume":
        """Delete a volume and its contents (``VolumeInUseError`` while a live sandbox
        mounts it)."""
        return self._unary(
            self.volumes.delete_volume, vpb.DeleteVolumeRequest(volume=volume), lambda r: r.volume
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


def _volume_size(size_mib: Optional[int], size_bytes: Optional[int]) -> int:
    """``CreateVolumeRequest.size_bytes`` of the two spellings (0: the server's default)."""
    if size_mib is not None and size_bytes is not None:
        raise errors.error("invalid_argument", "create_volume: give size_mib or size_bytes, not both")
    for name, value in (("size_mib", size_mib), ("size_bytes", size_bytes)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
            raise errors.error(
                "invalid_argument", f"create_volume: {name} must be a positive integer, not {value!r}"
            )
    if size_mib is not None:
        return size_mib * MIB
    return size_bytes or 0
