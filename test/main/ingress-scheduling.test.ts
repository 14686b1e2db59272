// INGRESS_THREAD_SCHEDULING: what serve's HTTP thread asks for, and what it settles for.
import { describe, expect, it } from "vitest";
import { ingressThreadPolicy } from "../../src/main/ingress-scheduling.js";

describe("the HTTP thread's scheduling policy", () => {
  const asked = (answer: boolean): { calls: number; setRealtime: () => Promise<boolean> } => {
    const probe = { calls: 0, setRealtime: () => Promise.resolve(answer) };
    probe.setRealtime = () => {
      probe.calls += 1;
      return Promise.resolve(answer);
    };
    return probe;
  };

  it("stays under the normal policy unless asked, without asking the kernel", async () => {
    const probe = asked(true);
    expect(await ingressThreadPolicy("normal", { setRealtime: probe.setRealtime, cores: 8 })).toBe("normal");
    expect(probe.calls).toBe(0);
  });

  it("goes real-time when asked and the kernel allows it", async () => {
    const probe = asked(true);
    expect(await ingressThreadPolicy("realtime", { setRealtime: probe.setRealtime, cores: 2 })).toBe("realtime");
    expect(probe.calls).toBe(1);
  });

  it("says so when the kernel refuses", async () => {
    expect(await ingressThreadPolicy("realtime", { setRealtime: asked(false).setRealtime, cores: 2 })).toBe("not allowed");
  });

  it("never goes real-time on one core, where it could starve the turns", async () => {
    const probe = asked(true);
    expect(await ingressThreadPolicy("realtime", { setRealtime: probe.setRealtime, cores: 1 })).toBe("one core");
    expect(probe.calls).toBe(0);
  });
});
