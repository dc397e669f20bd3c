//! Unit tests of policy compilation, normalization and hashing.

use super::*;

#[test]
fn same_policy_two_ways_same_hash() {
    let a = compile("version: 1\nsandbox:\n  env:\n    B: '2'\n    A: '1'\n").unwrap();
    let b = compile("{sandbox: {network: {default: DENY}, env: {A: \"1\", B: \"2\"}}, version: 1}")
        .unwrap();
    assert_eq!(a.policy_hash(), b.policy_hash());
    assert_ne!(a.policy_hash(), CompiledPolicy::builtin().policy_hash());
}

#[test]
fn repository_path_and_dependencies() {
    let p = compile(
        "version: 1\nrepository:\n  path: /workspace//app/\nsandbox:\n  dependencies:\n    command: [npm, ci]\n",
    )
    .unwrap();
    assert_eq!(p.repository_path.as_deref(), Some("/workspace/app"));
    assert_eq!(
        p.dependencies_command,
        Some(vec!["npm".to_string(), "ci".to_string()])
    );
    let d = compile("version: 1\nrepository: {}\n").unwrap();
    assert_eq!(d.repository_path.as_deref(), Some(DEFAULT_REPOSITORY_PATH));
    // Absent sections change nothing, including the hash of existing policies.
    assert_eq!(
        compile("version: 1\n").unwrap().policy_hash(),
        CompiledPolicy::builtin().policy_hash()
    );
    for (bad, path) in [
        (
            "version: 1\nrepository:\n  path: relative/dir\n",
            "repository.path",
        ),
        (
            "version: 1\nrepository:\n  path: /a/../etc\n",
            "repository.path",
        ),
        ("version: 1\nrepository:\n  path: /\n", "repository.path"),
        (
            "version: 1\nsandbox:\n  dependencies:\n    command: []\n",
            "sandbox.dependencies.command",
        ),
        (
            "version: 1\nsandbox:\n  dependencies:\n    command: ['']\n",
            "sandbox.dependencies.command",
        ),
    ] {
        let e = compile(bad).unwrap_err().to_string();
        assert!(e.contains(path), "{bad}: {e}");
    }
    for bad in [
        "version: 1\nrepository:\n  url: x\n",
        "version: 1\nsandbox:\n  dependencies:\n    command: npm ci\n",
        "version: 1\nsandbox:\n  dependencies:\n    run: [x]\n",
    ] {
        assert!(compile(bad).is_err(), "{bad}");
    }
}

#[test]
fn unknown_fields_and_bad_values_rejected() {
    for bad in [
        "version: 1\nsandbox:\n  nope: 1\n",
        "version: 2\n",
        "version: 1\nextra: true\n",
        "version: 1\nsandbox:\n  env:\n    '1BAD': x\n",
        "version: 1\nsandbox:\n  network:\n    default: allow\n",
        "version: [1\n",
        "version: 1\nsandbox:\n  resources:\n    pids: 1\n",
        "version: 1\nsandbox:\n  resources:\n    memory_mb: -5\n",
        "version: 1\nsandbox:\n  resources:\n    swap: 1\n",
    ] {
        let err = compile(bad).unwrap_err();
        assert_eq!(err.code(), "policy_invalid", "{bad}: {err}");
    }
}

#[test]
fn oversized_policy_rejected() {
    let huge = format!("version: 1\n#{}\n", "x".repeat(MAX_POLICY_BYTES));
    assert_eq!(compile(&huge).unwrap_err().code(), "policy_invalid");
}

const FULL: &str = "version: 1
sandbox:
  image:
    ref: registry.test/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
  env:
    CI: 'true'
  network:
    default: deny
    allow:
      - host: API.GitHub.com.
        ports: [443]
      - host: '*.npmjs.org'
        ports: [443, 80, 443]
    deny:
      - host: evil.npmjs.org
  secrets:
    GITHUB_TOKEN:
      hosts: [api.github.com]
";

#[test]
fn full_policy_normalizes_and_hashes_stably() {
    let a = compile(FULL).unwrap();
    assert_eq!(
        a.network.allow[0].host,
        HostPattern::Exact("api.github.com".into())
    );
    assert_eq!(a.network.allow[1].ports, vec![80, 443]);
    assert_eq!(
        a.network.deny[0].ports,
        Vec::<u16>::new(),
        "deny without ports = every port"
    );
    assert_eq!(a.secrets["GITHUB_TOKEN"].header, "Authorization");
    // Same policy, other order, flow style, other spelling of the same hosts.
    let b = compile(
        "{version: 1, sandbox: {secrets: {GITHUB_TOKEN: {hosts: [API.GITHUB.COM], format: 'Bearer {value}'}},
              network: {deny: [{host: EVIL.npmjs.org}], allow: [{host: '*.npmjs.org', ports: [80, 443]}, {host: api.github.com, ports: [443]}]},
              env: {CI: 'true'},
              image: {ref: registry.test/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef}}}",
    )
    .unwrap();
    assert_eq!(a.canonical_json(), b.canonical_json());
    assert_eq!(a.policy_hash(), b.policy_hash());
    let caps = a.required_capabilities();
    for c in [
        "network_host_port_filtering",
        "secret_isolation",
        "oci_images",
        "network_default_deny",
    ] {
        assert!(caps.contains(&c), "{caps:?}");
    }
}

#[test]
fn errors_name_the_yaml_path() {
    for (bad, path) in [
        ("version: 1\nsandbox:\n  network:\n    allow:\n      - host: ok.example\n      - host: 'a.*.b'\n", "sandbox.network.allow[1].host"),
        ("version: 1\nsandbox:\n  network:\n    allow:\n      - host: x.example\n        ports: [70000]\n", "sandbox.network.allow[0].ports[0]"),
        ("version: 1\nsandbox:\n  network:\n    allow:\n      - host: 10.0.0.1\n", "sandbox.network.allow[0].host"),
        ("version: 1\nsandbox:\n  image:\n    ref: alpine:latest\n", "sandbox.image.ref"),
        ("version: 1\nsandbox:\n  secrets:\n    TOKEN:\n      hosts: [api.example]\n      format: 'no placeholder'\n      header: X-Key\n", "sandbox.secrets.TOKEN"),
    ] {
        let e = compile(bad).unwrap_err();
        assert!(e.to_string().contains(path), "{bad}: {e}");
    }
}

#[test]
fn contradictions_are_conflicts() {
    for bad in [
        // deny wins, so this allow can never match
        "version: 1\nsandbox:\n  network:\n    allow: [{host: a.example.com, ports: [443]}]\n    deny: [{host: '*.example.com'}]\n",
        "version: 1\nsandbox:\n  network:\n    dangerously_allow_all: true\n    allow: [{host: a.example.com}]\n",
        "version: 1\nsandbox:\n  network:\n    allow: [{host: a.example.com}, {host: A.EXAMPLE.COM}]\n",
        // a secret bound to a host the sandbox cannot reach
        "version: 1\nsandbox:\n  secrets:\n    TOKEN: {hosts: [api.example.com]}\n",
    ] {
        assert_eq!(compile(bad).unwrap_err().code(), "policy_conflict", "{bad}");
    }
}

#[test]
fn error_messages_do_not_repeat_the_code() {
    // Callers print `[code]: message`; the message must not carry the code again
    // (it printed `policy_invalid: policy_invalid: …`).
    for bad in [
        "version: 2\n",
        "version: 1\nsandbox: {resources: {pids: 0}}\n",
        "version: 1\nsandbox:\n  network:\n    allow: [{host: a.example.com}]\n    deny: [{host: '*.example.com'}]\n",
        "{not yaml",
    ] {
        let e = compile(bad).unwrap_err();
        let msg = e.to_string();
        assert!(!msg.contains(e.code().as_str()), "{bad}: {msg}");
        assert!(!msg.is_empty(), "{bad}");
    }
}

#[test]
fn lifetime_section() {
    let p = compile(
        "version: 1\nsandbox:\n  lifetime:\n    ttl_seconds: 3600\n    idle_timeout_seconds: 300\n",
    )
    .unwrap();
    assert_eq!(p.lifetime.ttl_seconds, Some(3600));
    assert_eq!(p.lifetime.idle_timeout_seconds, Some(300));
    assert_ne!(p.policy_hash(), CompiledPolicy::builtin().policy_hash());
    let s = compile("version: 1\nsandbox:\n  lifetime:\n    suspend_after_seconds: 60\n").unwrap();
    assert_eq!(s.lifetime.suspend_after_seconds, Some(60));
    assert_ne!(s.policy_hash(), CompiledPolicy::builtin().policy_hash());
    // An empty section keeps the built-in hash.
    assert_eq!(
        compile("version: 1\nsandbox:\n  lifetime: {}\n")
            .unwrap()
            .policy_hash(),
        CompiledPolicy::builtin().policy_hash()
    );
    for bad in [
        "version: 1\nsandbox:\n  lifetime:\n    ttl_seconds: 0\n",
        "version: 1\nsandbox:\n  lifetime:\n    idle_timeout_seconds: 99999999999\n",
        "version: 1\nsandbox:\n  lifetime:\n    ttl_seconds: -1\n",
        "version: 1\nsandbox:\n  lifetime:\n    ttl: 5\n",
        "version: 1\nsandbox:\n  lifetime:\n    suspend_after_seconds: 0\n",
    ] {
        let err = compile(bad).unwrap_err();
        assert_eq!(err.code(), "policy_invalid", "{bad}: {err}");
    }
    let err = compile("version: 1\nsandbox:\n  lifetime:\n    ttl_seconds: 0\n").unwrap_err();
    assert!(
        err.to_string().contains("sandbox.lifetime.ttl_seconds"),
        "{err}"
    );
}

#[test]
fn allow_missing_sni_is_explicit_and_hashed() {
    let base = "version: 1\nsandbox:\n  network:\n    allow:\n      - host: cdn.test\n";
    let plain = compile(base).unwrap();
    assert!(!plain.network.allow[0].allow_missing_sni);
    // Off is the default and keeps the hash of a policy that does not mention it.
    let off = compile(&format!("{base}        allow_missing_sni: false\n")).unwrap();
    assert_eq!(off.policy_hash(), plain.policy_hash());
    assert!(!plain.canonical_json().contains("allow_missing_sni"));
    let on = compile(&format!("{base}        allow_missing_sni: true\n")).unwrap();
    assert!(on.network.allow[0].allow_missing_sni);
    assert_ne!(on.policy_hash(), plain.policy_hash());
    assert!(on.canonical_json().contains("\"allow_missing_sni\":true"));
    // Only allow rules take it.
    for (bad, path) in [
        (
            "version: 1\nsandbox:\n  network:\n    deny:\n      - host: x.test\n        allow_missing_sni: true\n",
            "sandbox.network.deny[0].allow_missing_sni",
        ),
        (
            "version: 1\nsandbox:\n  network:\n    unknown: ask\n    ask:\n      - host: x.test\n        allow_missing_sni: false\n",
            "sandbox.network.ask[0].allow_missing_sni",
        ),
    ] {
        let e = compile(bad).unwrap_err();
        assert_eq!(e.code(), "policy_invalid", "{bad}: {e}");
        assert!(e.to_string().contains(path), "{bad}: {e}");
    }
    assert_eq!(
        compile(&format!("{base}        allow_missing_sni: yes please\n"))
            .unwrap_err()
            .code(),
        "policy_invalid"
    );
}
