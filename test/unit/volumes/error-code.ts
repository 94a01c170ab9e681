// The code of the ApiError a call throws (null when it throws none), for tables of refusals.
import { ApiError } from "../../../src/http/errors";

export function errorCodeOf(run: () => unknown): string | null {
  try {
    run();
    return null;
  } catch (error) {
    if (error instanceof ApiError) return error.code;
    throw error;
  }
}
