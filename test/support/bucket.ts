/** An in-memory bucket (the `BodyBucket` an S3-compatible or R2 bucket fills), with what it holds. */
export function memoryBucket() {
  const objects = new Map<string, string>();
  return {
    objects,
    put: async (key: string, value: string) => void objects.set(key, value),
    get: async (key: string) => {
      const v = objects.get(key);
      return v === undefined ? null : { text: async () => v };
    },
    delete: async (keys: string[]) => {
      for (const k of keys) objects.delete(k);
    },
  };
}
