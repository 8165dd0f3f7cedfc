/** What a state change returns: success with a payload, or the reason it was refused (nothing changed). */
export type Result<Reason extends string, T extends object = object> =
  | ({ ok: true } & T)
  | { ok: false; reason: Reason };

export const OK = { ok: true } as const;

export function refuse<R extends string>(reason: R): { ok: false; reason: R } {
  return { ok: false, reason };
}
