/** A small seeded generator (mulberry32), so a failure replays from its seed. */
export function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let x = Math.imul(state ^ (state >>> 15), 1 | state);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

/** Choices drawn from one seeded generator. */
export class Dice {
  constructor(readonly next: () => number) {}

  static seeded(seed: number): Dice {
    return new Dice(random(seed));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  /** A whole number from `min` to `max`, both included. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)];
  }

  /** An item chosen by weight: `[[3, 'often'], [1, 'rarely']]`. */
  weighted<T>(items: ReadonlyArray<readonly [number, T]>): T {
    let roll = this.next() * items.reduce((sum, [weight]) => sum + weight, 0);
    for (const [weight, item] of items) if ((roll -= weight) < 0) return item;
    return items[items.length - 1][1];
  }
}
