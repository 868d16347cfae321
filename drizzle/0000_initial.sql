CREATE TABLE "balance_snapshots" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "balance_snapshots_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"fiat_currency" text NOT NULL,
	"fiat_balance" numeric NOT NULL,
	"crypto_currency" text NOT NULL,
	"crypto_balance" numeric NOT NULL,
	"credit_total" numeric NOT NULL,
	"credit_used" numeric NOT NULL,
	"credit_available" numeric NOT NULL,
	"can_withdraw" boolean NOT NULL,
	"taken_at" timestamp with time zone NOT NULL,
	"cycle_id" bigint
);
--> statement-breakpoint
CREATE TABLE "control" (
	"id" smallint PRIMARY KEY DEFAULT 1 NOT NULL,
	"paused" boolean NOT NULL,
	"reason" text,
	"changed_at" timestamp with time zone NOT NULL,
	"changed_by" text NOT NULL,
	CONSTRAINT "control_single_row_check" CHECK ("control"."id" = 1)
);
--> statement-breakpoint
CREATE TABLE "cycles" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "cycles_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"strategy" text NOT NULL,
	"slot" timestamp with time zone NOT NULL,
	"trigger" text NOT NULL,
	"state" text NOT NULL,
	"owner" text NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"reason_code" text,
	"error_code" text,
	"error_message" text,
	"quote_record_id" bigint,
	"quote_id" text,
	"amount" numeric,
	"price" numeric,
	"total_cost" numeric,
	"balance_snapshot_id" bigint,
	"trace" jsonb,
	"service_order_id" text,
	"claimed_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	"submitted_at" timestamp with time zone,
	"finished_at" timestamp with time zone,
	"lease_owner" text,
	"lease_until" timestamp with time zone,
	CONSTRAINT "cycles_trigger_check" CHECK ("cycles"."trigger" in ('schedule', 'once', 'missed')),
	CONSTRAINT "cycles_state_check" CHECK ("cycles"."state" in ('claimed', 'quoted', 'submitting', 'placed', 'skipped', 'failed', 'unsure', 'dry_run', 'not_placed'))
);
--> statement-breakpoint
CREATE TABLE "orders" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "orders_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"service_order_id" text NOT NULL,
	"cycle_id" bigint,
	"origin" text NOT NULL,
	"quote_id" text,
	"symbol" text NOT NULL,
	"amount" numeric NOT NULL,
	"price" numeric NOT NULL,
	"side" text NOT NULL,
	"service_timestamp" timestamp with time zone NOT NULL,
	"status" text NOT NULL,
	"expected_amount" numeric,
	"received_amount" numeric,
	"withdrawn_amount" numeric,
	"last_tracking" jsonb,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	"last_progress_at" timestamp with time zone NOT NULL,
	"next_check_at" timestamp with time zone NOT NULL,
	"lease_owner" text,
	"lease_until" timestamp with time zone,
	"stuck_flagged_at" timestamp with time zone,
	"settled_at" timestamp with time zone,
	CONSTRAINT "orders_origin_check" CHECK ("orders"."origin" in ('cycle', 'external')),
	CONSTRAINT "orders_status_check" CHECK ("orders"."status" in ('pending', 'partial', 'paid', 'withdrawn', 'settled'))
);
--> statement-breakpoint
CREATE TABLE "quotes" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "quotes_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"cycle_id" bigint,
	"quote_id" text NOT NULL,
	"symbol" text NOT NULL,
	"amount" numeric NOT NULL,
	"price" numeric NOT NULL,
	"total_cost" numeric NOT NULL,
	"total_filled" numeric NOT NULL,
	"expires_in" integer NOT NULL,
	"requested_at" timestamp with time zone NOT NULL,
	"received_at" timestamp with time zone NOT NULL,
	"deadline_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "settlement_events" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "settlement_events_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"order_id" bigint NOT NULL,
	"source" text NOT NULL,
	"from_status" text,
	"to_status" text NOT NULL,
	"expected_amount" numeric,
	"received_amount" numeric,
	"withdrawn_amount" numeric,
	"withdrawal" jsonb,
	"anomaly" text,
	"recorded_at" timestamp with time zone NOT NULL,
	CONSTRAINT "settlement_events_source_check" CHECK ("settlement_events"."source" in ('poll', 'webhook', 'reconcile', 'create')),
	CONSTRAINT "settlement_events_to_status_check" CHECK ("settlement_events"."to_status" in ('pending', 'partial', 'paid', 'withdrawn', 'settled'))
);
--> statement-breakpoint
CREATE TABLE "strategies" (
	"name" text PRIMARY KEY NOT NULL,
	"kind" text NOT NULL,
	"config" jsonb NOT NULL,
	"config_hash" text NOT NULL,
	"first_seen_at" timestamp with time zone NOT NULL,
	"last_seen_at" timestamp with time zone NOT NULL,
	"halted_at" timestamp with time zone,
	"halt_reason" text
);
--> statement-breakpoint
CREATE TABLE "webhook_events" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "webhook_events_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"dedupe_key" text NOT NULL,
	"kind" text NOT NULL,
	"service_order_id" text,
	"payload" jsonb NOT NULL,
	"received_at" timestamp with time zone NOT NULL,
	"processed_at" timestamp with time zone,
	"status" text DEFAULT 'pending' NOT NULL,
	CONSTRAINT "webhook_events_status_check" CHECK ("webhook_events"."status" in ('pending', 'processed', 'unknown_order'))
);
--> statement-breakpoint
ALTER TABLE "balance_snapshots" ADD CONSTRAINT "balance_snapshots_cycle_id_cycles_id_fk" FOREIGN KEY ("cycle_id") REFERENCES "public"."cycles"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "cycles" ADD CONSTRAINT "cycles_strategy_strategies_name_fk" FOREIGN KEY ("strategy") REFERENCES "public"."strategies"("name") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "cycles" ADD CONSTRAINT "cycles_quote_record_id_quotes_id_fk" FOREIGN KEY ("quote_record_id") REFERENCES "public"."quotes"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "cycles" ADD CONSTRAINT "cycles_balance_snapshot_id_balance_snapshots_id_fk" FOREIGN KEY ("balance_snapshot_id") REFERENCES "public"."balance_snapshots"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "orders" ADD CONSTRAINT "orders_cycle_id_cycles_id_fk" FOREIGN KEY ("cycle_id") REFERENCES "public"."cycles"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "quotes" ADD CONSTRAINT "quotes_cycle_id_cycles_id_fk" FOREIGN KEY ("cycle_id") REFERENCES "public"."cycles"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "settlement_events" ADD CONSTRAINT "settlement_events_order_id_orders_id_fk" FOREIGN KEY ("order_id") REFERENCES "public"."orders"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "balance_snapshots_taken_at_idx" ON "balance_snapshots" USING btree ("taken_at");--> statement-breakpoint
CREATE UNIQUE INDEX "cycles_strategy_slot_key" ON "cycles" USING btree ("strategy","slot");--> statement-breakpoint
CREATE INDEX "cycles_state_idx" ON "cycles" USING btree ("state","updated_at");--> statement-breakpoint
CREATE INDEX "cycles_claimed_at_idx" ON "cycles" USING btree ("claimed_at");--> statement-breakpoint
CREATE UNIQUE INDEX "orders_service_order_id_key" ON "orders" USING btree ("service_order_id");--> statement-breakpoint
CREATE INDEX "orders_cycle_idx" ON "orders" USING btree ("cycle_id");--> statement-breakpoint
CREATE INDEX "orders_due_idx" ON "orders" USING btree ("next_check_at") WHERE "orders"."settled_at" is null;--> statement-breakpoint
CREATE INDEX "quotes_cycle_idx" ON "quotes" USING btree ("cycle_id");--> statement-breakpoint
CREATE INDEX "settlement_events_order_idx" ON "settlement_events" USING btree ("order_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "webhook_events_dedupe_key_key" ON "webhook_events" USING btree ("dedupe_key");--> statement-breakpoint
CREATE INDEX "webhook_events_pending_idx" ON "webhook_events" USING btree ("received_at") WHERE "webhook_events"."status" = 'pending';