ALTER TABLE "cycles" ADD COLUMN "discrepancy" jsonb;--> statement-breakpoint
CREATE INDEX "cycles_quote_id_idx" ON "cycles" USING btree ("quote_id");