CREATE TABLE "strategy_versions" (
	"strategy" text NOT NULL,
	"version" integer NOT NULL,
	"config_hash" text NOT NULL,
	"content" text NOT NULL,
	"diff" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"created_by" text NOT NULL,
	"approved_at" timestamp with time zone,
	"approved_by" text,
	"running" boolean DEFAULT false NOT NULL,
	CONSTRAINT "strategy_versions_strategy_version_pk" PRIMARY KEY("strategy","version"),
	CONSTRAINT "strategy_versions_version_check" CHECK ("strategy_versions"."version" > 0),
	CONSTRAINT "strategy_versions_running_check" CHECK (not "strategy_versions"."running" or "strategy_versions"."approved_at" is not null)
);
--> statement-breakpoint
ALTER TABLE "cycles" ADD COLUMN "strategy_version" integer;--> statement-breakpoint
CREATE UNIQUE INDEX "strategy_versions_hash_key" ON "strategy_versions" USING btree ("strategy","config_hash");--> statement-breakpoint
CREATE UNIQUE INDEX "strategy_versions_running_key" ON "strategy_versions" USING btree ("strategy") WHERE "strategy_versions"."running";