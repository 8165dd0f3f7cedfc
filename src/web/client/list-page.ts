/** What a list view's pages share: one request for a page at a time, and filters applied once typing pauses. */

export interface PageRequests {
  /** A page is being asked for. */
  readonly loading: boolean;
  /**
   * Asks for a page: the one asked before is aborted, the region is busy until the answer. Answers
   * undefined when this request was aborted (another one, or the view left); rethrows other errors.
   */
  run<T>(load: (signal: AbortSignal) => Promise<T>): Promise<T | undefined>;
}

export function pageRequests(region: HTMLElement, signal: AbortSignal): PageRequests {
  let current: AbortController | undefined;
  return {
    get loading() {
      return current !== undefined;
    },
    async run(load) {
      current?.abort();
      const controller = new AbortController();
      current = controller;
      const abort = () => controller.abort();
      signal.addEventListener('abort', abort, { once: true });
      region.setAttribute('aria-busy', 'true');
      try {
        return await load(controller.signal);
      } catch (err) {
        if (controller.signal.aborted) return undefined;
        throw err;
      } finally {
        signal.removeEventListener('abort', abort);
        if (current === controller) {
          current = undefined;
          region.removeAttribute('aria-busy');
        }
      }
    },
  };
}

/** Calls `apply` with the field's trimmed value once typing pauses (and on change), when it differs from `current()`. */
export function whenTypingPauses(input: HTMLInputElement, current: () => string, apply: (value: string) => void, ms = 250): void {
  let timer: number | undefined;
  const settle = () => {
    window.clearTimeout(timer);
    const value = input.value.trim();
    if (value !== current()) apply(value);
  };
  input.addEventListener('input', () => {
    window.clearTimeout(timer);
    timer = window.setTimeout(settle, ms);
  });
  input.addEventListener('change', settle);
}
