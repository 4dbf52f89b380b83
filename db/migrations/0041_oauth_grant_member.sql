-- An assistant's grant remembers the member who approved it: their tokens work only while that person is an active
-- member of the account, and carry no more than the member's current role allows.
ALTER TABLE "oauth_grants" ADD COLUMN IF NOT EXISTS "user_id" uuid REFERENCES "users"("id") ON DELETE CASCADE;
