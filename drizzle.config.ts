import { defineConfig } from 'drizzle-kit';

// Only `generate` is used: migrations are applied by the application's own migrator (src/db/migrate.ts),
// which serializes concurrent replicas with an advisory lock.
export default defineConfig({
  dialect: 'postgresql',
  schema: './src/db/schema.ts',
  out: './drizzle',
});
