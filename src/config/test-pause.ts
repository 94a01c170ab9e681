// Test-only: PLATFORM_TEST_PAUSE_AT=<step> makes the process log `test pause at <step>` and wait
// forever when it reaches that step, so a crash test can kill it at exactly that point. Steps are
// named by area (`backup.placed`, `release.started`...). Unset (always, outside tests), it does nothing.
const pauseAt = process.env.PLATFORM_TEST_PAUSE_AT ?? "";

export async function pauseForTest(step: string): Promise<void> {
  if (pauseAt !== step) return;
  console.log(`test pause at ${step}`);
  await new Promise<never>(() => {});
}
