-- The GDPR deletion confirmation's queue is the channels module's (it sends the e-mail): jobs queued under its old
-- name move to the new one.
UPDATE "jobs" SET "queue" = 'channels.deletion_confirmation' WHERE "queue" = 'contacts.deletion_confirmation';
