-- A message's row is written once and then updated by its provider statuses (sent, delivered, read), which change no
-- indexed column. With room left on each page the new row version stays on the page (a HOT update: no new entry in
-- any of the table's five indexes); full pages made every status a new entry in each index.
ALTER TABLE "messages" SET (fillfactor = 70);
