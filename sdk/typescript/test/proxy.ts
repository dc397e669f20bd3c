/**
 * A real TCP proxy on loopback that breaks connections on purpose: it forwards bytes
 * between the SDK and the server and, once a set number of bytes went one way, resets both
 * sides (as when a network path dies). It counts what it forwarded, so a test can tell a
 * resumed transfer (about the file's size on the wire) from one that started over.
 */
import net from "node:net";

export class BreakingProxy {
  up = 0;
  down = 0;
  cuts = 0;
  refused = 0;
  private server: net.Server;
  private sockets = new Set<net.Socket>();

  private constructor(
    private readonly upstream: { host: string; port: number },
    /** Cumulative client->server / server->client byte counts at which to cut. */
    readonly cutUp: number[],
    readonly cutDown: number[],
    /** After the first cut, reset every new connection at once (a server gone for good). */
    private readonly dieAfterCut: boolean,
  ) {
    this.server = net.createServer((c) => this.accept(c));
  }

  static async start(
    upstream: string,
    o: { cutUp?: number[]; cutDown?: number[]; dieAfterCut?: boolean } = {},
  ): Promise<BreakingProxy> {
    const [host, port] = upstream.replace(/^https?:\/\//, "").split(":");
    const p = new BreakingProxy({ host, port: Number(port) }, [...(o.cutUp ?? [])], [...(o.cutDown ?? [])], o.dieAfterCut ?? false);
    await new Promise<void>((r) => p.server.listen(0, "127.0.0.1", r));
    return p;
  }

  get host(): string {
    return `http://127.0.0.1:${(this.server.address() as net.AddressInfo).port}`;
  }

  private accept(c: net.Socket): void {
    this.sockets.add(c);
    c.on("close", () => this.sockets.delete(c));
    c.on("error", () => {});
    if (this.dieAfterCut && this.cuts > 0) {
      this.refused++;
      c.resetAndDestroy();
      return;
    }
    const u = net.connect(this.upstream);
    this.sockets.add(u);
    u.on("close", () => this.sockets.delete(u));
    u.on("error", () => c.destroy());
    c.on("error", () => u.destroy());
    this.pump(c, u, true);
    this.pump(u, c, false);
    c.on("end", () => u.end());
    u.on("end", () => c.end());
  }

  private pump(src: net.Socket, dst: net.Socket, up: boolean): void {
    src.on("data", (chunk: Buffer) => {
      const cuts = up ? this.cutUp : this.cutDown;
      const before = up ? this.up : this.down;
      let data = chunk;
      let cut = false;
      if (cuts.length && before + data.length >= cuts[0]) {
        data = data.subarray(0, Math.max(0, cuts[0] - before));
        cuts.shift();
        cut = true;
      }
      if (up) this.up += data.length;
      else this.down += data.length;
      if (data.length) dst.write(data);
      if (cut) {
        this.cuts++;
        // Let the partial data go out, then reset both ends.
        setImmediate(() => {
          src.resetAndDestroy();
          dst.resetAndDestroy();
        });
      }
    });
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}
