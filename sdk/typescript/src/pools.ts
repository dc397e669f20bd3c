/**
 * Warm pools (docs/pools.md): READY sandboxes kept for a template (policy, image, limits)
 * and handed out by {@link Pool.claim} in well under a millisecond of server time. A
 * claimed sandbox is the caller's; {@link Sandbox.release} gives it back (destroyed, its
 * slot re-warmed). Pools are owned by their creator (others get `pool_not_found`).
 */
import { clientFor, type CleanroomClient, type ClientOptions } from "./client.js";
import { errorFor } from "./errors.js";
import type { Pool as PoolMessage, PoolStats as PoolStatsMessage } from "./gen/cleanroom/v1/pools_pb.js";
import { dateOf } from "./info.js";
import { CONNECT_KEYS, checkOptions, limitFields, limitsOf, policyText, type Limits, type LimitsInfo, type PolicyInput } from "./options.js";
import { Sandbox } from "./sandbox.js";

/** Options of {@link Pool.create}. */
export interface PoolOptions extends ClientOptions {
  name?: string;
  /** Policy of every sandbox of the pool: YAML text, a file path or an object. */
  policy?: PolicyInput;
  /** Digest-pinned OCI image reference; empty: the host-view root. */
  image?: string;
  limits?: Limits;
  /** Backend name; empty: the server's. */
  runtime?: string;
  minReady?: number;
  maxReady?: number;
  /** READY sandboxes older than this are replaced (0: never). */
  maxAgeSeconds?: number;
  reusable?: boolean;
  autoscaling?: { enabled?: boolean; headroomFactor?: number; intervalSeconds?: number };
}

const POOL_KEYS = [
  ...CONNECT_KEYS,
  "name",
  "policy",
  "image",
  "limits",
  "runtime",
  "minReady",
  "maxReady",
  "maxAgeSeconds",
  "reusable",
  "autoscaling",
];

/** A pool's definition. */
export interface PoolInfo {
  id: string;
  name: string;
  owner: string;
  imageRef: string;
  limits?: LimitsInfo;
  runtime: string;
  minReady: number;
  maxReady: number;
  maxAgeSeconds: number;
  reusable: boolean;
  autoscaling: { enabled: boolean; headroomFactor: number; intervalSeconds: number };
  policyHash: string;
  imageDigest: string;
  createdAt?: Date;
}

/** A pool's counters now. Latencies are server-side, in microseconds. */
export interface PoolStats {
  ready: number;
  claimed: number;
  warming: number;
  claimsPerMinute: number;
  avgClaimLatencyUs: number;
  p99ClaimLatencyUs: number;
  claimsTotal: number;
  missesTotal: number;
  /** The autoscaler's current target of READY sandboxes. */
  targetReady: number;
  /** READY sandboxes found dead at claim, skipped and replaced. */
  replacedDeadTotal: number;
}

function poolInfo(p: PoolMessage | undefined, call: string): PoolInfo {
  if (!p) throw errorFor("internal", `${call} returned no pool`);
  const a = p.autoscaling;
  return {
    id: p.poolId,
    name: p.name,
    owner: p.owner,
    imageRef: p.template?.imageRef ?? "",
    limits: limitsOf(p.template?.limits),
    runtime: p.template?.runtime ?? "",
    minReady: p.minReady,
    maxReady: p.maxReady,
    maxAgeSeconds: p.maxAgeSeconds,
    reusable: p.reusable,
    autoscaling: { enabled: a?.enabled ?? false, headroomFactor: a?.headroomFactor ?? 0, intervalSeconds: a?.intervalSeconds ?? 0 },
    policyHash: p.policyHash,
    imageDigest: p.imageDigest,
    createdAt: dateOf(p.createdAt),
  };
}

function poolStats(s: PoolStatsMessage | undefined): PoolStats {
  return {
    ready: s?.ready ?? 0,
    claimed: s?.claimed ?? 0,
    warming: s?.warming ?? 0,
    claimsPerMinute: s?.claimsPerMinute ?? 0,
    avgClaimLatencyUs: Number(s?.avgClaimLatencyUs ?? 0n),
    p99ClaimLatencyUs: Number(s?.p99ClaimLatencyUs ?? 0n),
    claimsTotal: Number(s?.claimsTotal ?? 0n),
    missesTotal: Number(s?.missesTotal ?? 0n),
    targetReady: s?.targetReady ?? 0,
    replacedDeadTotal: Number(s?.replacedDeadTotal ?? 0n),
  };
}

function count(v: number | undefined, name: string): number {
  if (v === undefined) return 0;
  if (!Number.isInteger(v) || v < 0 || v > 0xffffffff) {
    throw errorFor("invalid_argument", `${name}: expected a whole number >= 0, got ${String(v)}`);
  }
  return v;
}

/** A warm pool on a server. */
export class Pool {
  private constructor(
    readonly client: CleanroomClient,
    readonly info: PoolInfo,
  ) {}

  get id(): string {
    return this.info.id;
  }

  /** Create a pool; it starts warming at once. */
  static async create(opts: PoolOptions = {}): Promise<Pool> {
    checkOptions(opts, POOL_KEYS, "Pool.create");
    checkOptions(opts.autoscaling, ["enabled", "headroomFactor", "intervalSeconds"], "Pool.create autoscaling");
    const c = clientFor(opts);
    const a = opts.autoscaling;
    const r = await c.call(
      c.pools.createPool({
        name: opts.name ?? "",
        template: {
          policyYaml: policyText(opts.policy, "Pool.create"),
          imageRef: opts.image ?? "",
          limits: limitFields(opts.limits, "Pool.create"),
          runtime: opts.runtime ?? "",
        },
        minReady: count(opts.minReady, "minReady"),
        maxReady: count(opts.maxReady, "maxReady"),
        maxAgeSeconds: count(opts.maxAgeSeconds, "maxAgeSeconds"),
        reusable: opts.reusable ?? false,
        autoscaling: a
          ? { enabled: a.enabled ?? false, headroomFactor: a.headroomFactor ?? 0, intervalSeconds: count(a.intervalSeconds, "intervalSeconds") }
          : undefined,
      }),
    );
    return new Pool(c, poolInfo(r.pool, "CreatePool"));
  }

  /** A pool of yours by id (`PoolNotFoundError` otherwise). */
  static async get(poolId: string, opts: ClientOptions = {}): Promise<Pool> {
    checkOptions(opts, CONNECT_KEYS, "Pool.get");
    const c = clientFor(opts);
    const r = await c.call(c.pools.getPoolStats({ poolId }));
    return new Pool(c, poolInfo(r.pool, "GetPoolStats"));
  }

  /** Your pools, each with its counters. */
  static async list(opts: ClientOptions = {}): Promise<{ pool: Pool; stats: PoolStats }[]> {
    checkOptions(opts, CONNECT_KEYS, "Pool.list");
    const c = clientFor(opts);
    const r = await c.call(c.pools.listPools({}));
    return r.pools.map((p, i) => ({ pool: new Pool(c, poolInfo(p, "ListPools")), stats: poolStats(r.stats[i]) }));
  }

  /** The pool's counters now. */
  async stats(): Promise<PoolStats> {
    const r = await this.client.call(this.client.pools.getPoolStats({ poolId: this.id }));
    return poolStats(r.stats);
  }

  /**
   * Take a READY sandbox (`NoReadySandboxesError` when none is); it becomes yours.
   * `claimLatencyUs` is the server's time for the claim.
   */
  async claim(
    o: { agentPublicKey?: string; delegationChain?: string[] } = {},
  ): Promise<Sandbox & { claimLatencyUs: number; attestationEnvelopeJson: string }> {
    checkOptions(o, ["agentPublicKey", "delegationChain"], "Pool.claim");
    const r = await this.client.call(
      this.client.pools.claimSandbox({
        poolId: this.id,
        agentPublicKey: o.agentPublicKey ?? "",
        delegationChain: o.delegationChain ?? [],
      }),
    );
    if (!r.sandbox) throw errorFor("internal", "ClaimSandbox returned no sandbox");
    const sbx = Sandbox.of(this.client, r.sandbox.sandboxId);
    return Object.assign(sbx, {
      claimLatencyUs: Number(r.claimLatencyUs),
      attestationEnvelopeJson: r.attestationEnvelopeJson,
    });
  }

  /** Destroy the pool and the READY sandboxes it holds (claimed ones stay the claimers'). */
  async destroy(): Promise<void> {
    await this.client.call(this.client.pools.destroyPool({ poolId: this.id }));
  }
}
