ALTER TABLE "quotes" ALTER COLUMN "expires_in" SET DATA TYPE numeric;--> statement-breakpoint
ALTER TABLE "replicas" ADD COLUMN "api_pace" numeric;