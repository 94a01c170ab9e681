// The success envelope: payload keys beside `success` and the same object under `data`, so
// clients written against either reading of the spec work.

export function ok<Payload extends Record<string, unknown>>(
  payload: Payload = {} as Payload,
): { success: true; data: Payload } & Payload {
  return { success: true, ...payload, data: payload };
}

export function errorBody(error: string, code: string) {
  return { success: false as const, error, code };
}
