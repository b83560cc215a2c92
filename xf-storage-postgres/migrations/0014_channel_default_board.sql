-- The board a Pinterest channel's pins go on when an upload names none.
ALTER TABLE channels ADD COLUMN default_board text;
