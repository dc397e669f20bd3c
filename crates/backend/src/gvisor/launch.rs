//! `runsc run`: the sandbox's network namespace, its scratch filesystem, its bundle, and
//! the container started in a private mount namespace of runsc's own (a copy of the
//! scratch one, [`super::scratch`]), where
//! - a small tmpfs covers `/proc/sys/net/core` (runsc refuses to start a networked sandbox
//!   when `/proc/sys/net/core/rmem_default` is visible, its test for "the host's network
//!   namespace"; recent kernels show that file in every namespace, so the test is wrong
//!   there — the namespace is the sandbox's own, made by [`super::netns`]);
//! - an image root is bound onto the bundle's `rootfs` from an overlay whose lower layer
//!   is the image (`hostview::image_root`: runsc's mount points go to its upper layer on
//!   the scratch tmpfs; gVisor's own overlay takes the sandbox's writes: the shared image
//!   cache is never written).
//!
//! Those mounts exist only in that namespace and vanish with runsc's processes.

use super::bundle::Bundle;
use super::{netns, scratch, GvisorBackend, GvisorSandbox};
use crate::{BackendError, NetworkDevice, ProvisionedSandbox, SandboxSpec};
use std::collections::BTreeMap;
use std::ffi::CString;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::AtomicU64;
use std::sync::Mutex;
use std::time::Duration;

/// How long `runsc run` may take before the create fails.
const RUN_TIMEOUT: Duration = Duration::from_secs(60);

impl GvisorBackend {
    /// Build the namespace and the bundle, start the container, read its sandbox pid.
    pub(super) async fn launch(
        &self,
        spec: &SandboxSpec,
        dir: &Path,
    ) -> Result<(GvisorSandbox, ProvisionedSandbox), BackendError> {
        let t0 = std::time::Instant::now();
        let tun = match spec.network {
            crate::NetworkSpec::Tun(t) => Some(t),
            crate::NetworkSpec::LoopbackOnly => None,
        };
        let bundle = Bundle {
            dir: dir.to_path_buf(),
        };
        let (scratch_dir, disk) = (bundle.dir.join("scratch"), spec.limits.disk_bytes);
        // Independent: made side by side (each on a thread of its own).
        // The namespace made ahead of time when there is one (netns.rs).
        let spare = netns::take(tun);
        let (ns, scratch) = tokio::join!(
            async move {
                match spare {
                    Some(ns) => Ok(Ok(ns)),
                    None => tokio::task::spawn_blocking(move || netns::create(tun)).await,
                }
            },
            tokio::task::spawn_blocking(move || scratch::create(&scratch_dir, disk)),
        );
        let ns = ns.map_err(|e| BackendError::LaunchFailed(format!("netns task: {e}")))??;
        let scratch =
            scratch.map_err(|e| BackendError::LaunchFailed(format!("scratch task: {e}")))??;
        let t_scratch = t0.elapsed();
        let ns_path = format!("/proc/{}/fd/{}", std::process::id(), ns.ns.as_raw_fd());
        bundle.write(spec, &self.init_exe, &ns_path, &scratch)?;
        // An overlay runsc can make mount points in (hostview.rs); never the cache itself.
        let image = match &spec.image {
            Some(i) => Some(super::hostview::image_root(&scratch, &i.rootfs)?),
            None => None,
        };
        let t_bundle = t0.elapsed();
        // After the root's skeleton, before runsc starts the sandbox (fsnap): what changes
        // from here on is the sandbox's. A restored memory checkpoint's files changed
        // before this launch, so everything of it counts as changed.
        let fs_since = match (
            spec.checkpoint.is_some(),
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH),
        ) {
            (false, Ok(d)) => (d.as_secs() as i64, i64::from(d.subsec_nanos())),
            _ => (0, 0),
        };
        // A one-shot sandbox's container starts with its first command (oneshot.rs): one
        // runsc invocation for the whole run instead of `run --detach` plus `exec`.
        let deferred = super::oneshot::defers(spec);
        let init_pid = match deferred {
            true => 0,
            false => {
                self.start_container(
                    &spec.sandbox_id,
                    &bundle,
                    ns.ns.as_raw_fd(),
                    &scratch,
                    image.as_deref(),
                    super::checkpoint::start_args(spec),
                )
                .await?
            }
        };
        tracing::debug!(
            sandbox_id = %spec.sandbox_id,
            one_shot = deferred,
            netns_and_scratch_ms = t_scratch.as_secs_f64() * 1e3,
            bundle_ms = (t_bundle - t_scratch).as_secs_f64() * 1e3,
            runsc_run_ms = (t0.elapsed() - t_bundle).as_secs_f64() * 1e3,
            "gvisor launch timings"
        );
        // The next sandbox's namespace, made while this one's first command runs.
        tokio::task::spawn_blocking(move || netns::refill(tun));
        let init_start_time = match deferred {
            true => 0,
            false => crate::linux::procinfo::start_time(init_pid).unwrap_or_default(),
        };
        let mut info = BTreeMap::new();
        info.insert("runtime".into(), "gvisor".into());
        info.insert("platform".into(), self.runsc.platform.as_str().into());
        info.insert("runsc_version".into(), self.runsc.version.clone());
        info.insert(
            "root".into(),
            if spec.image.is_some() {
                "image"
            } else {
                "host-view"
            }
            .into(),
        );
        info.insert(
            "network".into(),
            match (&ns.tun, &ns.gateway) {
                (_, Some(_)) => {
                    "veth -> egress gateway in its own namespace (kernel sockets, no other route)"
                }
                (Some(_), None) => "tun -> egress gateway (userspace stack, no other route)",
                (None, None) => "loopback only",
            }
            .into(),
        );
        let provisioned = ProvisionedSandbox {
            sandbox_id: spec.sandbox_id.clone(),
            state_dir: dir.to_path_buf(),
            init_pid,
            init_start_time,
            info,
            network_device: match (ns.tun, ns.gateway) {
                (_, Some(gw)) => Some(NetworkDevice::Kernel(std::sync::Arc::new(gw))),
                (Some(t), None) => Some(NetworkDevice::Tun(std::sync::Arc::new(t))),
                (None, None) => None,
            },
        };
        let sbx = GvisorSandbox {
            bundle,
            netns: ns.ns,
            scratch,
            image_root: image,
            tun,
            released: Mutex::new(None),
            gate: tokio::sync::RwLock::new(()),
            next_id: AtomicU64::new(1),
            pids: spec.limits.pids,
            relays: Default::default(),
            paused: std::sync::atomic::AtomicBool::new(false),
            freezing: Mutex::new(None),
            procs: Mutex::new(Default::default()),
            start: std::sync::Arc::new(tokio::sync::Mutex::new(match deferred {
                true => super::oneshot::Start::Deferred,
                false => super::oneshot::Start::Running,
            })),
            fs_since,
        };
        Ok((sbx, provisioned))
    }

    /// Start the container of `bundle` with runsc's `start` arguments (`run`, or `restore`
    /// from an image) in the sandbox's network namespace `netns` and a private copy of its
    /// scratch mount namespace (see [`NamespaceSetup`]); returns the sandbox's host pid.
    pub(super) async fn start_container(
        &self,
        sandbox_id: &str,
        bundle: &Bundle,
        netns: RawFd,
        scratch: &scratch::Scratch,
        image: Option<&Path>,
        start: Vec<std::ffi::OsString>,
    ) -> Result<i32, BackendError> {
        let mut cmd =
            self.container_command(sandbox_id, bundle, netns, scratch, image, start, &[])?;
        // runsc hands its own stdio to the container's first process, which lives as long
        // as the sandbox and which the sandbox's processes can write to (`/proc/1/fd/2`):
        // a host file here would grow without bound, outside every limit. So nothing is
        // kept; a failed launch is reported by its exit status.
        cmd.stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        let status = tokio::time::timeout(RUN_TIMEOUT, cmd.status())
            .await
            .map_err(|_| BackendError::LaunchFailed("runsc run timed out".into()))?
            .map_err(|e| BackendError::io("runsc run", e))?;
        if !status.success() {
            return Err(BackendError::LaunchFailed(format!(
                "runsc run failed ({status}); run `runsc --debug run` by hand for its reasons"
            )));
        }
        std::fs::read_to_string(bundle.pid_file())
            .ok()
            .and_then(|p| p.trim().parse::<i32>().ok())
            .filter(|p| *p > 1)
            .ok_or_else(|| BackendError::LaunchFailed("runsc wrote no sandbox pid".into()))
    }

    /// The `runsc` command that starts the container of `bundle` with runsc's `start`
    /// arguments (`run [--detach]`, or `restore` from an image) in the sandbox's network
    /// namespace `netns` and a private copy of its scratch mount namespace (see
    /// [`NamespaceSetup`]); its stdio is the caller's to set (it becomes the first
    /// process's). `keep`: descriptors of the server's that runsc inherits (for its
    /// `--pass-fd`, in `start`); every other one is closed on exec.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn container_command(
        &self,
        sandbox_id: &str,
        bundle: &Bundle,
        netns: RawFd,
        scratch: &scratch::Scratch,
        image: Option<&Path>,
        start: Vec<std::ffi::OsString>,
        keep: &[RawFd],
    ) -> Result<tokio::process::Command, BackendError> {
        let mut setup =
            NamespaceSetup::new(netns, scratch.mntns.as_raw_fd(), image, &bundle.rootfs())?;
        setup.keep = keep.to_vec();
        // A pid file left by an earlier start (a restore after a suspension) is not ours.
        let _ = std::fs::remove_file(bundle.pid_file());
        let mut cmd = self.runsc.command();
        // No segmentation offload: with it, gVisor hands the tun TCP segments larger than
        // its MTU that reach the gateway garbled (measured: HTTP heads refused as
        // malformed); the gateway reads plain MTU-sized IP packets.
        cmd.args(["--network=sandbox", "--gso=false", "--software-gso=false"])
            .arg(scratch.overlay_flag())
            .args(start)
            .arg("--bundle")
            .arg(&bundle.dir)
            // The sandbox's host pid, written by runsc itself: a `runsc state` afterwards cost
            // ~20 ms of every create (measured).
            .arg("--pid-file")
            .arg(bundle.pid_file())
            .arg(sandbox_id);
        // SAFETY: the closure runs in the forked child before exec and only makes system
        // calls on data prepared before the fork (no allocation, no locks).
        unsafe {
            cmd.pre_exec(move || setup.enter());
        }
        Ok(cmd)
    }
}

/// What runsc's child does between fork and exec, prepared beforehand.
struct NamespaceSetup {
    /// Inherited by runsc (close-on-exec cleared in the child only).
    keep: Vec<RawFd>,
    netns: RawFd,
    mntns: RawFd,
    core: CString,
    image: Option<(CString, CString)>,
}

impl NamespaceSetup {
    fn new(
        netns: RawFd,
        mntns: RawFd,
        image: Option<&Path>,
        rootfs: &Path,
    ) -> Result<Self, BackendError> {
        let c = |p: &Path| {
            CString::new(p.as_os_str().as_bytes())
                .map_err(|_| BackendError::LaunchFailed(format!("path {}", p.display())))
        };
        Ok(NamespaceSetup {
            keep: Vec::new(),
            netns,
            mntns,
            core: c(Path::new("/proc/sys/net/core"))?,
            image: match image {
                Some(i) => Some((c(i)?, c(rootfs)?)),
                None => None,
            },
        })
    }

    /// Join the sandbox's network namespace and its scratch mount namespace, then a
    /// private copy of the latter with the mounts the module doc describes.
    fn enter(&self) -> std::io::Result<()> {
        use nix::mount::{mount, MsFlags};
        use nix::sched::{setns, unshare, CloneFlags};
        for &fd in &self.keep {
            // SAFETY: fcntl on a descriptor number the server holds open across the fork;
            // only this child's table changes.
            if unsafe { libc::fcntl(fd, libc::F_SETFD, 0) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        // SAFETY: the server's open mount namespace fd, inherited across the fork and valid
        // until exec; only borrowed for the call. (Joining it resets root and cwd to that
        // namespace's, the host's: every path runsc is given is absolute.)
        let mnt = unsafe { BorrowedFd::borrow_raw(self.mntns) };
        setns(mnt, CloneFlags::CLONE_NEWNS)?;
        // SAFETY: the fd is the server's open namespace fd, inherited across the fork and
        // valid until exec; it is only borrowed for the call.
        let ns = unsafe { BorrowedFd::borrow_raw(self.netns) };
        setns(ns, CloneFlags::CLONE_NEWNET)?;
        unshare(CloneFlags::CLONE_NEWNS)?;
        let none: Option<&str> = None;
        mount(none, "/", none, MsFlags::MS_REC | MsFlags::MS_PRIVATE, none)?;
        // Looked up after joining the namespace: /proc/sys/net entries are per namespace.
        mount(
            Some("tmpfs"),
            self.core.as_c_str(),
            Some("tmpfs"),
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
            Some("size=4k,mode=0555"),
        )?;
        if let Some((image, rootfs)) = &self.image {
            mount(
                Some(image.as_c_str()),
                rootfs.as_c_str(),
                none,
                MsFlags::MS_BIND | MsFlags::MS_REC,
                none,
            )?;
            mount(
                none,
                rootfs.as_c_str(),
                none,
                // Writable: the image root's overlay, whose upper layer takes the mount
                // points runsc makes; the image cache below it is never written.
                MsFlags::MS_REMOUNT | MsFlags::MS_BIND | MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
                none,
            )?;
        }
        Ok(())
    }
}
