//! The server's attestation signer: an ed25519 key generated once and kept 0600 in the
//! state dir (`attestation.key`, PKCS#8 PEM), the facts that do not change while the
//! server runs (hash of the init binary, backend and version, capabilities), and the
//! signing of one statement per sandbox at create/claim.
//!
//! The format and the offline check live in `cleanroom-attest`; this module only knows
//! where the key lives and what the server states.

use crate::model::error::EngineError;
use crate::store::SandboxRow;
use cleanroom_attest::{sign, AgentKey, Envelope, SigningKey, Statement, STATEMENT_VERSION};
use std::io::Write;
use std::path::Path;

/// How long a statement is valid after it is signed.
pub const VALIDITY: std::time::Duration = std::time::Duration::from_secs(24 * 3600);
/// Key file name in the state dir.
pub const KEY_FILE: &str = "attestation.key";

/// Signs sandbox statements.
pub struct Attestor {
    key: SigningKey,
    init_sha256: String,
    backend: String,
    backend_version: String,
    capabilities: Vec<String>,
    /// Capabilities of the server's other runtimes, by name: a sandbox's statement names
    /// its own runtime (`SandboxRow::backend`) and that runtime's capabilities.
    runtimes: std::collections::BTreeMap<String, Vec<String>>,
    /// What implements each other runtime (gvisor: the runsc version), by name: added to
    /// `backend_version` in its sandboxes' statements.
    runtime_versions: std::collections::BTreeMap<String, String>,
}

/// An agent identity and its delegation chain, validated.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentBinding {
    pub agent: Option<AgentKey>,
    pub chain: Vec<AgentKey>,
}

/// Longest delegation chain accepted.
pub const MAX_CHAIN: usize = 16;

impl AgentBinding {
    /// Parse the request's fields; any malformed key is `invalid_argument` (fail closed: a
    /// sandbox is never attested with an identity other than the one asked for).
    pub fn parse(agent: &str, chain: &[String]) -> Result<AgentBinding, EngineError> {
        let bad = |field: &str, e: cleanroom_attest::key::KeyError| {
            EngineError::invalid(format!("{field}: {e}")).with("field", field)
        };
        if agent.trim().is_empty() {
            if !chain.is_empty() {
                return Err(EngineError::invalid(
                    "delegation_chain given without agent_public_key",
                ));
            }
            return Ok(AgentBinding::default());
        }
        if chain.len() > MAX_CHAIN {
            return Err(EngineError::invalid(format!(
                "delegation_chain has {} keys; at most {MAX_CHAIN}",
                chain.len()
            )));
        }
        let agent = AgentKey::parse(agent).map_err(|e| bad("agent_public_key", e))?;
        let chain = chain
            .iter()
            .map(|k| AgentKey::parse(k).map_err(|e| bad("delegation_chain", e)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(AgentBinding {
            agent: Some(agent),
            chain,
        })
    }

    pub fn agent_display(&self) -> String {
        self.agent.map(|a| a.display()).unwrap_or_default()
    }

    pub fn chain_display(&self) -> Vec<String> {
        self.chain.iter().map(AgentKey::display).collect()
    }
}

impl Attestor {
    /// Load `state_dir/attestation.key`, or create it (0600, never overwritten). A key file
    /// that others can read or that another uid owns is refused like the secrets file, and
    /// an unreadable or corrupt one fails the start: a new key is never generated silently
    /// (every attestation signed so far would stop verifying). Creation is atomic (see
    /// [`install_new_key`]), so a crash never leaves a half-written key behind.
    pub fn load_or_create(
        state_dir: &Path,
        init_exe: &Path,
        backend: &str,
        capabilities: &[&str],
    ) -> Result<Attestor, String> {
        let path = state_dir.join(KEY_FILE);
        let load = || {
            let text = crate::identity::private_file::read_private(&path)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            SigningKey::from_pkcs8_pem(&text).map_err(|e| {
                format!(
                    "{}: {e} (the key is not replaced automatically: remove the file to \
                     generate a new one; attestations signed so far then no longer verify)",
                    path.display()
                )
            })
        };
        let key = match std::fs::symlink_metadata(&path) {
            Ok(_) => load()?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let (key, pem) = SigningKey::generate().map_err(|e| e.to_string())?;
                let pem = zeroize::Zeroizing::new(pem);
                if install_new_key(state_dir, |f| f.write_all(pem.as_bytes()))? {
                    key
                } else {
                    // Another process installed one first: that one is the key.
                    load()?
                }
            }
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        let init_sha256 = file_sha256(init_exe)
            .map_err(|e| format!("hash of the init binary {}: {e}", init_exe.display()))?;
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_default();
        let mut capabilities: Vec<String> = capabilities.iter().map(|c| c.to_string()).collect();
        capabilities.sort();
        Ok(Attestor {
            key,
            init_sha256,
            backend: backend.into(),
            backend_version: format!("cleanroom {}; linux {kernel}", env!("CARGO_PKG_VERSION")),
            capabilities,
            runtimes: Default::default(),
            runtime_versions: Default::default(),
        })
    }

    /// Declare another runtime of this server and its capabilities (attested for its
    /// sandboxes instead of the default backend's).
    pub fn add_runtime(&mut self, name: &str, capabilities: &[&str]) {
        let mut caps: Vec<String> = capabilities.iter().map(|c| c.to_string()).collect();
        caps.sort();
        self.runtimes.insert(name.to_string(), caps);
    }

    /// Name what implements runtime `name` (`runsc version …`) in its statements.
    pub fn set_runtime_version(&mut self, name: &str, version: &str) {
        self.runtime_versions
            .insert(name.to_string(), version.to_string());
    }

    /// The raw public key.
    pub fn public_key(&self) -> [u8; 32] {
        self.key.public_key()
    }

    /// Sign the statement for `row` as it is now (owner, policy, image), bound to `who`.
    pub fn attest(&self, row: &SandboxRow, who: &AgentBinding, pool_id: &str) -> Envelope {
        self.attest_full(row, who, pool_id, "", "")
    }

    /// [`Attestor::attest`] naming the effective egress rules' hash (after a live change;
    /// empty: not written).
    pub fn attest_with_rules(
        &self,
        row: &SandboxRow,
        who: &AgentBinding,
        pool_id: &str,
        effective_rules_hash: &str,
    ) -> Envelope {
        self.attest_full(row, who, pool_id, effective_rules_hash, "")
    }

    /// [`Attestor::attest`] for a sandbox restored from a memory checkpoint: the
    /// statement names the checkpoint's content digest (`sha256:…`; empty: none).
    pub fn attest_restored(
        &self,
        row: &SandboxRow,
        who: &AgentBinding,
        pool_id: &str,
        checkpoint_digest: &str,
    ) -> Envelope {
        self.attest_full(row, who, pool_id, "", checkpoint_digest)
    }

    /// The statement with every optional field (empty: not written).
    fn attest_full(
        &self,
        row: &SandboxRow,
        who: &AgentBinding,
        pool_id: &str,
        effective_rules_hash: &str,
        checkpoint_digest: &str,
    ) -> Envelope {
        let now = crate::store::now_micros().max(0) as u64 / 1000;
        // The sandbox's own runtime; one this attestor was never told of is attested with
        // no capabilities rather than another runtime's.
        let (backend, capabilities) = if row.backend.is_empty() || row.backend == self.backend {
            (self.backend.clone(), self.capabilities.clone())
        } else {
            let caps = self.runtimes.get(&row.backend).cloned().unwrap_or_default();
            (row.backend.clone(), caps)
        };
        let backend_version = match self.runtime_versions.get(&backend) {
            Some(v) => format!("{}; {backend} {v}", self.backend_version),
            None => self.backend_version.clone(),
        };
        let statement = Statement {
            version: STATEMENT_VERSION,
            sandbox_id: row.id.clone(),
            owner: row.owner.to_string(),
            policy_hash: row.policy_hash.clone(),
            effective_rules_hash: effective_rules_hash.into(),
            image_digest: row.image_digest.clone(),
            init_sha256: self.init_sha256.clone(),
            backend,
            backend_version,
            capabilities,
            agent: who.agent.map(|a| a.identity()),
            delegation_chain: who.chain.iter().map(AgentKey::identity).collect(),
            pool_id: pool_id.into(),
            created_at_unix_ms: now,
            valid_until_unix_ms: now + VALIDITY.as_millis() as u64,
            restored_from_checkpoint: checkpoint_digest.into(),
        };
        sign(&self.key, &statement)
    }
}

/// Prefix of the temporary files a new key is written to before it is linked into place
/// (`attestation.key.tmp.<pid>.<random>`).
const KEY_TMP_PREFIX: &str = "attestation.key.tmp.";

/// Create `dir/attestation.key` atomically with the bytes `write` puts into it: a fresh
/// temp file in the same directory (`O_EXCL`, `O_NOFOLLOW`, mode 0600), fsynced, then
/// `linkat`ed to the final name (which fails rather than replace an existing key), the
/// directory fsynced and the temp removed. `Ok(false)`: a key file already exists and was
/// left alone.
///
/// Why: opening the final name and then writing left an empty or partial 0600 key after a
/// crash or `ENOSPC`, and every later start failed on it until someone deleted it. Now the
/// key name only ever points at a complete, synced file. Temp files left by a crashed start
/// are removed first; the caller holds the state-dir lock (`serve::lock_state_dir`), so
/// no other start is using them. One that cannot be removed is only logged: its random name
/// cannot collide with ours.
fn install_new_key(
    dir: &Path,
    write: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
) -> Result<bool, String> {
    use nix::fcntl::{openat, OFlag};
    use nix::sys::stat::Mode;
    use nix::unistd::{linkat, unlinkat, UnlinkatFlags};
    let at = |e: &dyn std::fmt::Display| format!("{}: {e}", dir.display());
    let dirfd = nix::fcntl::open(
        dir,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| at(&e))?;
    for entry in std::fs::read_dir(dir).map_err(|e| at(&e))? {
        let Ok(entry) = entry else { continue };
        let name = entry.file_name();
        if !name
            .as_encoded_bytes()
            .starts_with(KEY_TMP_PREFIX.as_bytes())
        {
            continue;
        }
        // unlinkat removes a symlink itself, never its target; a directory is refused.
        if let Err(e) = unlinkat(&dirfd, name.as_os_str(), UnlinkatFlags::NoRemoveDir) {
            tracing::warn!(file = ?name, error = %e, "leftover attestation key temp file not removed");
        }
    }
    let mut rand = [0u8; 8];
    getrandom::getrandom(&mut rand).map_err(|e| at(&e))?;
    let hex: String = rand.iter().map(|b| format!("{b:02x}")).collect();
    let tmp = format!("{KEY_TMP_PREFIX}{}.{hex}", std::process::id());
    let fd = openat(
        &dirfd,
        tmp.as_str(),
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::from_bits_truncate(0o600),
    )
    .map_err(|e| at(&format!("{tmp}: {e}")))?;
    let mut file = std::fs::File::from(fd);
    let written = write(&mut file).and_then(|_| file.sync_all());
    drop(file);
    let linked = match written {
        Ok(()) => linkat(
            &dirfd,
            tmp.as_str(),
            &dirfd,
            KEY_FILE,
            nix::fcntl::AtFlags::empty(),
        )
        .map_err(std::io::Error::from),
        Err(e) => Err(e),
    };
    let installed = match linked {
        Ok(()) => nix::unistd::fsync(&dirfd)
            .map(|_| true)
            .map_err(|e| at(&format!("fsync: {e}"))),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(at(&format!("{KEY_FILE}: {e}"))),
    };
    // The key (if any) is in place; the temp name is only a second link to it, or junk.
    if let Err(e) = unlinkat(&dirfd, tmp.as_str(), UnlinkatFlags::NoRemoveDir) {
        tracing::warn!(file = %tmp, error = %e, "attestation key temp file not removed");
    }
    installed
}

/// `sha256:<hex>` of a file, streamed. ring's assembly SHA-256, not the `sha2` crate: the
/// binary is tens of MiB and this runs at every server start (also in unoptimised builds).
fn file_sha256(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let mut h = ring::digest::Context::new(&ring::digest::SHA256);
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    let hex: String = h
        .finish()
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok(format!("sha256:{hex}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The identity point (`01 00…00`): under it `R = identity, S = 0` verifies anything.
    const IDENTITY: &str = "ed25519:AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
    /// A point of order 4 (`00…00 80`), not the all-zero encoding.
    const ORDER_4: &str = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAIA=";
    const GOOD: &str = "ed25519:BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=";

    /// Small-order agent and delegation keys are refused (the same parser as every other
    /// key); an ordinary key still binds.
    #[test]
    fn agent_binding_refuses_small_order_keys() {
        for (agent, chain) in [
            (IDENTITY, vec![]),
            (ORDER_4, vec![]),
            (GOOD, vec![IDENTITY.to_string()]),
            (GOOD, vec![GOOD.to_string(), ORDER_4.to_string()]),
        ] {
            assert!(
                AgentBinding::parse(agent, &chain).is_err(),
                "{agent} {chain:?} accepted"
            );
        }
        let b = AgentBinding::parse(GOOD, &[GOOD.to_string()]).unwrap();
        assert_eq!(b.agent_display(), GOOD);
        assert_eq!(b.chain_display(), vec![GOOD.to_string()]);
    }

    /// A small stand-in for the init binary (only hashed).
    fn init_exe(dir: &Path) -> std::path::PathBuf {
        let p = dir.join("init");
        std::fs::write(&p, b"not really an init binary").unwrap();
        p
    }

    fn start(state: &Path, init: &Path) -> Result<[u8; 32], String> {
        Attestor::load_or_create(state, init, "linux", &["network.egress"]).map(|a| a.public_key())
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    /// Temp files left by a crashed start (a partial key, an empty one, a symlink) do not
    /// stop the key being generated and loaded; they are removed (the symlink's target is
    /// untouched), the key is 0600, and a second start loads the same key.
    #[test]
    fn leftover_temp_files_do_not_stop_key_creation_and_restarts_keep_the_key() {
        use std::os::unix::fs::PermissionsExt;
        let other = tempfile::tempdir().unwrap();
        let init = init_exe(other.path());
        let outside = other.path().join("outside");
        std::fs::write(&outside, b"keep me").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path();
        std::fs::write(
            state.join(format!("{KEY_TMP_PREFIX}4242.0011223344556677")),
            b"-----BEGIN PRIVATE KEY-----\nMC4CAQAw",
        )
        .unwrap();
        std::fs::write(
            state.join(format!("{KEY_TMP_PREFIX}1.ffffffffffffffff")),
            b"",
        )
        .unwrap();
        std::os::unix::fs::symlink(&outside, state.join(format!("{KEY_TMP_PREFIX}7.aa"))).unwrap();

        let first = start(state, &init).unwrap();
        assert_eq!(names(state), vec![KEY_FILE.to_string()]);
        let mode = std::fs::metadata(state.join(KEY_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(std::fs::read(&outside).unwrap(), b"keep me");
        assert_eq!(start(state, &init).unwrap(), first);
        assert_eq!(names(state), vec![KEY_FILE.to_string()]);
    }

    /// A write that fails midway (here `ENOSPC` after part of the key) leaves no key file
    /// and no temp behind, so the next start generates a key instead of failing on a
    /// truncated one; an existing key is never replaced.
    #[test]
    fn failed_key_write_leaves_no_key_behind() {
        let other = tempfile::tempdir().unwrap();
        let init = init_exe(other.path());
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path();
        let err = install_new_key(state, |f| {
            f.write_all(b"-----BEGIN PRIVATE KEY-----\nMC4C")?;
            Err(std::io::Error::from_raw_os_error(libc::ENOSPC))
        })
        .unwrap_err();
        assert!(err.contains(&state.display().to_string()), "{err}");
        assert!(names(state).is_empty(), "{:?}", names(state));

        let first = start(state, &init).unwrap();
        let before = std::fs::read(state.join(KEY_FILE)).unwrap();
        assert!(!install_new_key(state, |f| f.write_all(b"another key")).unwrap());
        assert_eq!(std::fs::read(state.join(KEY_FILE)).unwrap(), before);
        assert_eq!(start(state, &init).unwrap(), first);
        assert_eq!(names(state), vec![KEY_FILE.to_string()]);
    }
}
