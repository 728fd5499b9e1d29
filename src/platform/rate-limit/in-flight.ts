/**
 * Counts what is in progress at once on this instance, per key (a computer, an organization), so
 * a caller can be refused past a cap. Per instance: N instances admit N times the cap in all.
 */
export class InFlight {
  private readonly counts = new Map<string, number>();
  private taken = 0;

  /** How many are in progress, whatever their keys (each `take` counts once). */
  get total(): number {
    return this.taken;
  }

  count(key: string): number {
    return this.counts.get(key) ?? 0;
  }

  /** Counts one more for each key; call the returned function once, when it ends (more calls do nothing). */
  take(...keys: string[]): () => void {
    for (const key of keys) this.counts.set(key, this.count(key) + 1);
    this.taken += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.taken -= 1;
      for (const key of keys) {
        const left = this.count(key) - 1;
        if (left > 0) this.counts.set(key, left);
        else this.counts.delete(key);
      }
    };
  }
}
