-- The processes of a deployment (`herold serve`), for `herold status`: each registers at its start, marks itself
-- seen every 30 seconds and removes its row when it stops; a row not seen for a minute is a process that died.
CREATE TABLE IF NOT EXISTS "herold_processes" (
  "id" uuid PRIMARY KEY NOT NULL,
  "role" text NOT NULL,
  "host" text NOT NULL,
  "pid" integer NOT NULL,
  "url" text,
  "database" text NOT NULL,
  "started_at" timestamp with time zone NOT NULL,
  "seen_at" timestamp with time zone NOT NULL
);
