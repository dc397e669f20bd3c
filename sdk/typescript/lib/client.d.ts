import { type Client } from "@connectrpc/connect";
import { type ConnectOptions, type Target } from "./config.js";
import { ExecutionService, ImageService, SandboxService } from "./gen/cleanroom/v1/cleanroom_pb.js";
import { FileService } from "./gen/cleanroom/v1/files_pb.js";
import { SandboxLifetimeService } from "./gen/cleanroom/v1/lifetime_pb.js";
import { ApprovalService } from "./gen/cleanroom/v1/approvals_pb.js";
import { InboundService } from "./gen/cleanroom/v1/inbound_pb.js";
import { NetworkService } from "./gen/cleanroom/v1/network_pb.js";
import { AttestationService } from "./gen/cleanroom/v1/attestation_pb.js";
import { WarmPoolService } from "./gen/cleanroom/v1/pools_pb.js";
import { SnapshotService } from "./gen/cleanroom/v1/snapshots_pb.js";
import { VolumeService } from "./gen/cleanroom/v1/volumes_pb.js";
/** Code of the error a pinned connection fails with when the certificate differs. */
export declare const CERT_PIN_MISMATCH = "ERR_CLEANROOM_CERT_PIN_MISMATCH";
/** Clients for the Cleanroom services of one server. */
export declare class CleanroomClient {
    readonly target: Target;
    readonly sandboxes: Client<typeof SandboxService>;
    readonly executions: Client<typeof ExecutionService>;
    readonly images: Client<typeof ImageService>;
    readonly files: Client<typeof FileService>;
    readonly lifetimes: Client<typeof SandboxLifetimeService>;
    readonly snapshots: Client<typeof SnapshotService>;
    readonly pools: Client<typeof WarmPoolService>;
    readonly volumes: Client<typeof VolumeService>;
    readonly approvals: Client<typeof ApprovalService>;
    /** Live egress rules (docs/network.md). */
    readonly network: Client<typeof NetworkService>;
    /** Exposed ports (docs/network.md "Inbound"). */
    readonly inbound: Client<typeof InboundService>;
    /** The URL prefix of this server (`http://localhost` on a unix socket). */
    readonly baseUrl: string;
    readonly attestations: Client<typeof AttestationService>;
    constructor(opts?: ConnectOptions);
    /** Await a unary call, mapping failures to typed errors. */
    call<T>(p: Promise<T>): Promise<T>;
    /** Iterate a server stream, mapping failures to typed errors. */
    stream<T>(it: AsyncIterable<T>): AsyncGenerator<T>;
    private map;
}
/** Options that name a server, or hand an existing client over. */
export type ClientOptions = ConnectOptions & {
    client?: CleanroomClient;
};
/** `o.client`, else a client built from `o`'s connection options (the others are ignored here). */
export declare function clientFor(o: ClientOptions): CleanroomClient;
