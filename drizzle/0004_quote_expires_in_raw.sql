ALTER TABLE "quotes" ALTER COLUMN "expires_in" SET DATA TYPE double precision;--> statement-breakpoint
ALTER TABLE "quotes" ALTER COLUMN "expires_in" DROP NOT NULL;