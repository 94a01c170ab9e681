// The success envelope: payload keys beside `success` and the same object under `data`, so
// clients written against either reading of the spec work; and the error envelope.
import { ERROR_STATUS, type ErrorCode } from "./errors";

export function ok<Payload extends Record<string, unknown>>(
  payload: Payload = {} as Payload,
): { success: true; data: Payload } & Payload {
  return { success: true, ...payload, data: payload };
}

export function errorBody(error: string, code: string) {
  return { success: false as const, error, code };
}

/** An error answer, for the layers that answer before (or instead of) Elysia's error handler. */
export function errorResponse(code: ErrorCode, message: string, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(errorBody(message, code)), {
    status: ERROR_STATUS[code],
    headers: { "content-type": "application/json; charset=utf-8", ...headers },
  });
}
