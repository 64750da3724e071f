/** Runs `task` with everything written to stderr kept instead of printed. */
export async function capturingStderr<T>(task: () => Promise<T>): Promise<{ result: T; stderr: string }> {
  const write = process.stderr.write.bind(process.stderr);
  let stderr = '';
  process.stderr.write = (chunk: string | Uint8Array) => {
    stderr += chunk.toString();
    return true;
  };
  try {
    return { result: await task(), stderr };
  } finally {
    process.stderr.write = write;
  }
}
