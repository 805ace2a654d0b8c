import { isStatus } from "./kubeRest";

/**
 * Runs a read-modify-write `attempt` again while it fails with 409 Conflict (someone wrote the object between our
 * read and our write, or a precondition no longer holds: read again and retry), at most `retries` more times.
 * `alsoOn` retries other statuses too (404 while a controller re-creates the object). Any other failure, or the
 * last conflict, is thrown.
 */
export async function retryOnConflict<T>(retries: number, attempt: () => Promise<T>, alsoOn: readonly number[] = []): Promise<T> {
  for (let tried = 0; ; tried++) {
    try {
      return await attempt();
    } catch (err) {
      if (![409, ...alsoOn].some((status) => isStatus(err, status)) || tried >= retries) throw err;
    }
  }
}
