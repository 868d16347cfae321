-- Several accounts: every row that describes one account at the service names it. Rows from before are the
-- single account's, `default`. The unique keys of orders and webhook events become per account, so a
-- replica of the previous release (whose ON CONFLICT names the old keys) must be stopped before this runs.
ALTER TABLE "strategies" ADD COLUMN "account" text DEFAULT 'default' NOT NULL;--> statement-breakpoint
ALTER TABLE "cycles" ADD COLUMN "account" text DEFAULT 'default' NOT NULL;--> statement-breakpoint
ALTER TABLE "orders" ADD COLUMN "account" text DEFAULT 'default' NOT NULL;--> statement-breakpoint
ALTER TABLE "balance_snapshots" ADD COLUMN "account" text DEFAULT 'default' NOT NULL;--> statement-breakpoint
ALTER TABLE "webhook_events" ADD COLUMN "account" text DEFAULT 'default' NOT NULL;--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "accounts" text[];--> statement-breakpoint
CREATE INDEX "cycles_account_quote_id_idx" ON "cycles" USING btree ("account","quote_id");--> statement-breakpoint
CREATE UNIQUE INDEX "orders_account_service_order_id_key" ON "orders" USING btree ("account","service_order_id");--> statement-breakpoint
CREATE INDEX "balance_snapshots_account_taken_at_idx" ON "balance_snapshots" USING btree ("account","taken_at");--> statement-breakpoint
CREATE UNIQUE INDEX "webhook_events_account_dedupe_key_key" ON "webhook_events" USING btree ("account","dedupe_key");--> statement-breakpoint
DROP INDEX "cycles_quote_id_idx";--> statement-breakpoint
DROP INDEX "orders_service_order_id_key";--> statement-breakpoint
DROP INDEX "balance_snapshots_taken_at_idx";--> statement-breakpoint
DROP INDEX "webhook_events_dedupe_key_key";
