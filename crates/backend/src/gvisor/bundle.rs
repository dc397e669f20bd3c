//! The OCI bundle of a gVisor sandbox: `config.json` and the files the server generates
//! for it, all in the sandbox's own directory (a tree of the server's; nothing here is
//! ever written into an image or the host's system directories).
//!
//! The root is the same unpacked image the Linux backend uses (bound read-only inside
//! `runsc`'s private mount namespace, with gVisor's in-memory overlay on top, so writes
//! land in the sandbox's memory and never in the shared cache), or, without an image, the
//! host view: a skeleton with the host's system directories bound read-only (through
//! idmapped clones that show their owners as `nobody`, [`super::hostview`]) and its
//! secrets masked, like the Linux backend's. `/tmp`, `/root` and `/workspace` are bound
//! from one tmpfs capped at the disk limit ([`super::scratch`]); CPU and memory limits
//! go into the spec's cgroup, the pids limit into gVisor's and the host's cgroups
//! ([`super::pids`]).

use super::scratch::{self, Scratch};
use crate::linux::sandbox::rootfs::{MASKED_FILES, SYSTEM_DIRS};
use crate::{BackendError, SandboxSpec};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// Largest CA bundle read out of a root (a real one is ~200 KiB).
const MAX_BUNDLE: u64 = 4 << 20;
/// The system CA bundle a root may carry.
const SYSTEM_BUNDLE: &str = "etc/ssl/certs/ca-certificates.crt";
/// Where the in-sandbox init is bound (the server's own executable, read-only).
pub const INIT_PATH: &str = "/run/cleanroom-init";
/// The argument that makes the `cleanroom` binary the sandbox's idle init.
pub const INIT_ARG: &str = "__gvisor-init";
/// The cgroup (below each controller's root) that holds every gVisor sandbox's own.
pub const CGROUP_PARENT: &str = "cleanroom-gvisor";
/// Default `PATH` of the init and of executions that bring none.
pub const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The paths of one sandbox's bundle.
#[derive(Debug, Clone)]
pub struct Bundle {
    pub dir: PathBuf,
}

impl Bundle {
    pub fn rootfs(&self) -> PathBuf {
        self.dir.join("rootfs")
    }
    fn files(&self) -> PathBuf {
        self.dir.join("files")
    }
    /// Where `runsc run` writes the sandbox's host pid.
    pub fn pid_file(&self) -> PathBuf {
        self.dir.join("sandbox.pid")
    }
    pub fn procs(&self) -> PathBuf {
        self.dir.join("procs")
    }

    /// Replace the process of `config.json` (a one-shot's first command, oneshot.rs). The
    /// file is the server's own, written by [`Bundle::write`].
    pub fn set_process(&self, process: Value) -> Result<(), BackendError> {
        let path = self.dir.join("config.json");
        let io = |what: &str, e: std::io::Error| {
            BackendError::io(format!("{what} {}", path.display()), e)
        };
        let text = std::fs::read(&path).map_err(|e| io("read", e))?;
        let mut config: Value = serde_json::from_slice(&text)
            .map_err(|e| BackendError::LaunchFailed(format!("{}: {e}", path.display())))?;
        config["process"] = process;
        std::fs::write(&path, config.to_string()).map_err(|e| io("write", e))
    }

    /// Write everything `runsc run` needs: the root skeleton (host view) or its mountpoint
    /// (image), the generated files and `config.json`. `netns` is the path runsc opens
    /// to join the sandbox's network namespace.
    pub fn write(
        &self,
        spec: &SandboxSpec,
        init_exe: &Path,
        netns: &str,
        scratch: &Scratch,
    ) -> Result<(), BackendError> {
        let io = |what: &str, p: &Path, e: std::io::Error| {
            BackendError::io(format!("{what} {}", p.display()), e)
        };
        let (root, files, procs) = (self.rootfs(), self.files(), self.procs());
        for d in [&root, &files.join("run"), &procs] {
            std::fs::create_dir_all(d).map_err(|e| io("create", d, e))?;
        }
        let mut mounts = base_mounts(scratch);
        let gateway = match spec.network {
            crate::NetworkSpec::Tun(t) => Some(t.gateway),
            crate::NetworkSpec::LoopbackOnly => None,
        };
        let resolv = files.join("resolv.conf");
        let resolv_text = match gateway {
            Some(g) => format!("nameserver {g}\noptions edns0\n"),
            None => String::new(),
        };
        std::fs::write(&resolv, resolv_text).map_err(|e| io("write", &resolv, e))?;
        let empty = files.join("empty");
        std::fs::write(&empty, b"").map_err(|e| io("write", &empty, e))?;
        let system_bundle = match &spec.image {
            Some(image) => {
                check_image_etc(&image.rootfs)?;
                read_root_bundle(&image.rootfs)
            }
            None => {
                self.host_view(&mut mounts, &empty, scratch)?;
                std::fs::read(Path::new("/").join(SYSTEM_BUNDLE)).ok()
            }
        };
        mounts.push(bind(&resolv, "/etc/resolv.conf"));
        mounts.push(bind(init_exe, INIT_PATH));
        if let Some(pem) = &spec.trusted_ca_pem {
            let run = files.join("run");
            let own = run.join("sandbox-ca.crt");
            std::fs::write(&own, pem).map_err(|e| io("write", &own, e))?;
            let mut full = system_bundle.clone().unwrap_or_default();
            if !full.is_empty() && !full.ends_with(b"\n") {
                full.push(b'\n');
            }
            full.extend_from_slice(pem.as_bytes());
            let combined = run.join("ca-bundle.crt");
            std::fs::write(&combined, &full).map_err(|e| io("write", &combined, e))?;
            mounts.push(bind(&run, "/run/cleanroom"));
            if system_bundle.is_some() {
                mounts.push(bind(&combined, &format!("/{SYSTEM_BUNDLE}")));
            }
        }
        let config = config(spec, mounts, netns);
        let path = self.dir.join("config.json");
        std::fs::write(&path, config.to_string()).map_err(|e| io("write", &path, e))
    }

    /// The host view: the skeleton's links (merged `/usr`) and read-only binds of the
    /// host's system directories, with the host's secret files masked by an empty file.
    fn host_view(
        &self,
        mounts: &mut Vec<Value>,
        empty: &Path,
        scratch: &Scratch,
    ) -> Result<(), BackendError> {
        let root = self.rootfs();
        for dir in ["tmp", "root", "workspace", "proc", "dev", "sys", "run"] {
            let d = root.join(dir);
            std::fs::create_dir_all(&d)
                .map_err(|e| BackendError::io(format!("create {}", d.display()), e))?;
        }
        let mut bound: Vec<&str> = Vec::new();
        for dir in SYSTEM_DIRS {
            let host = Path::new("/").join(dir);
            let inside = root.join(dir);
            let Ok(meta) = std::fs::symlink_metadata(&host) else {
                continue;
            };
            let made = if meta.file_type().is_symlink() {
                std::fs::read_link(&host).and_then(|t| std::os::unix::fs::symlink(t, &inside))
            } else if meta.is_dir() {
                bound.push(*dir);
                std::fs::create_dir_all(&inside)
            } else {
                continue;
            };
            made.map_err(|e| BackendError::io(format!("skeleton {}", inside.display()), e))?;
        }
        // Bound from idmapped clones: the host's owners appear as `nobody` (hostview.rs).
        for (dir, source) in super::hostview::attach(scratch, &bound)? {
            mounts.push(bind(&source, &format!("/{dir}")));
        }
        // Through the idmapped view a secret file no one but its owner and group may read
        // is unreadable to the sandbox already (and runsc's gofer cannot open it to mount
        // over it); one readable by others is masked by an empty file.
        for file in MASKED_FILES {
            let world_readable = std::fs::metadata(Path::new("/").join(file)).is_ok_and(|m| {
                std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o004 != 0
            });
            if world_readable {
                mounts.push(bind(empty, &format!("/{file}")));
            }
        }
        Ok(())
    }
}

/// The mounts every sandbox gets: its own /proc, /dev, /sys, and the three writable
/// directories of the scratch tmpfs (which the disk limit caps together).
fn base_mounts(scratch: &Scratch) -> Vec<Value> {
    let mut m = vec![
        json!({"destination": "/proc", "type": "proc", "source": "proc"}),
        json!({"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
               "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]}),
        json!({"destination": "/dev/pts", "type": "devpts", "source": "devpts",
               "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"]}),
        json!({"destination": "/dev/shm", "type": "tmpfs", "source": "shm",
               "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"]}),
        json!({"destination": "/sys", "type": "sysfs", "source": "sysfs",
               "options": ["nosuid", "noexec", "nodev", "ro"]}),
        super::pids::cgroup_mount(),
    ];
    for (name, _, dest) in scratch::DIRS {
        m.push(
            json!({"destination": dest, "type": "bind", "source": scratch.source(name),
                      "options": ["rbind", "rw", "nosuid", "nodev"]}),
        );
    }
    m
}

/// A read-only bind of a host path the server made or chose (never an image's).
fn bind(src: &Path, dest: &str) -> Value {
    json!({"destination": dest, "type": "bind", "source": src,
           "options": ["rbind", "ro", "nosuid", "nodev"]})
}

/// `config.json`: an idle init as the container's process (executions come through
/// `runsc exec`), no capabilities, its namespaces (the network one given), its limits.
fn config(spec: &SandboxSpec, mounts: Vec<Value>, netns: &str) -> Value {
    let l = &spec.limits;
    json!({
        "ociVersion": "1.0.2",
        "process": {
            "terminal": false,
            "user": {"uid": 0, "gid": 0},
            "args": [
                INIT_PATH,
                INIT_ARG,
                super::pids::PIDS_ARG,
                super::pids::sentry_limit(l.pids).to_string(),
            ],
            "env": [format!("PATH={DEFAULT_PATH}")],
            "cwd": "/",
            "capabilities": no_capabilities(),
            "noNewPrivileges": true,
            "rlimits": super::pids::rlimits(l.pids),
        },
        "root": {"path": "rootfs", "readonly": spec.image.is_none()},
        "hostname": spec.hostname,
        "mounts": mounts,
        "linux": {
            "namespaces": [
                {"type": "pid"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"},
                {"type": "network", "path": netns},
            ],
            "resources": {
                "memory": {"limit": l.memory_bytes},
                "pids": {"limit": super::pids::host_limit(l.pids)},
                "cpu": {"quota": l.cpu_millis.saturating_mul(100), "period": 100_000},
            },
            "cgroupsPath": format!("/{CGROUP_PARENT}/{}", spec.sandbox_id),
        },
    })
}

/// Every capability set empty (as the Linux backend clears them in its sandboxes).
pub fn no_capabilities() -> Value {
    json!({"bounding": [], "effective": [], "inheritable": [], "permitted": [], "ambient": []})
}

/// Refuse (`image_unsupported`, as the linux runtime does) an image whose `/etc` is not a
/// directory or whose `/etc/resolv.conf` is a directory or special file: the gateway's
/// resolver configuration is bound there, and runsc would only fail to start. Paths are
/// resolved with their links confined to the image root, as the sentry resolves them.
fn check_image_etc(rootfs: &Path) -> Result<(), BackendError> {
    use nix::fcntl::{OFlag, OpenHow, ResolveFlag};
    let root = std::fs::File::open(rootfs)
        .map_err(|e| BackendError::io(format!("open {}", rootfs.display()), e))?;
    let kind = |path: &str| -> Option<std::fs::FileType> {
        let how = OpenHow::new()
            .flags(OFlag::O_PATH | OFlag::O_CLOEXEC)
            .resolve(ResolveFlag::RESOLVE_IN_ROOT | ResolveFlag::RESOLVE_NO_MAGICLINKS);
        let fd = crate::linux::sys::openat2(&root, path, how).ok()?;
        std::fs::File::from(fd)
            .metadata()
            .ok()
            .map(|m| m.file_type())
    };
    if kind("etc").is_some_and(|t| !t.is_dir()) {
        return Err(BackendError::ImageUnsupported(
            "/etc is not a directory inside the image: cannot point /etc/resolv.conf at the egress gateway".into(),
        ));
    }
    if kind("etc/resolv.conf").is_some_and(|t| !t.is_file()) {
        return Err(BackendError::ImageUnsupported(
            "/etc/resolv.conf is a directory or special file: cannot point it at the egress gateway".into(),
        ));
    }
    Ok(())
}

/// The root's own CA bundle, read with its links confined to the root (an image's link
/// to a host path finds nothing), bounded; `None` when it has none.
fn read_root_bundle(rootfs: &Path) -> Option<Vec<u8>> {
    use nix::fcntl::{OFlag, OpenHow, ResolveFlag};
    use std::io::Read;
    let root = std::fs::File::open(rootfs).ok()?;
    let how = OpenHow::new()
        .flags(OFlag::O_RDONLY | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK)
        .resolve(ResolveFlag::RESOLVE_IN_ROOT | ResolveFlag::RESOLVE_NO_MAGICLINKS);
    let fd = crate::linux::sys::openat2(&root, SYSTEM_BUNDLE, how).ok()?;
    let file = std::fs::File::from(fd);
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() > MAX_BUNDLE {
        return None;
    }
    let mut out = Vec::new();
    file.take(MAX_BUNDLE).read_to_end(&mut out).ok()?;
    Some(out)
}
