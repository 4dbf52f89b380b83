import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import path from 'node:path'
import { describe, test } from 'node:test'
import { openDatabase } from '../../src/platform/db/client.ts'
import { childEnv, runCli, tempDataDir } from '../helpers/process.ts'

// A German shop's Excel export (semicolons, a UTF-8 byte-order mark, E-Mail/Telefon headers, national mobile
// numbers, a Kundennummer column) imported by the real CLI into an account in Europe/Berlin: every line, the numbers
// stored in E.164 with the country of the account's time zone; --country reads one file in another country; a
// number that cannot be valid for the country is refused with its line named.

const GERMAN = [
  'Vorname;Nachname;E-Mail;Telefon;Kundennummer',
  'Anna;Schulz;anna.schulz@example.de;0151 12345678;K-1001',
  'Bernd;Meier;bernd@example.de;0171/2345678;K-1002',
  'Clara;Wolf;;0160-98765432;K-1003',
  'Dieter;Kraus;dieter@example.de;+49 152 34567890;K-1004',
  'Eva;Brandt;eva@example.de;0049 176 11122233;K-1005',
].join('\r\n')

async function cli(env: NodeJS.ProcessEnv, args: string[]) {
  const result = await runCli([...args, '--json'], env)
  return { code: result.code, body: JSON.parse(result.stdout), stderr: result.stderr }
}

describe('herold import contacts: national numbers read in the account’s country', () => {
  test('a German Excel file into an account in Europe/Berlin: every line, numbers in E.164', async () => {
    const dir = tempDataDir()
    const env = childEnv({ HEROLD_DATA_DIR: dir })
    const created = await cli(env, ['accounts', 'create', '--name', 'Blumen Schulz', '--timezone', 'Europe/Berlin'])
    assert.equal(created.code, 0, created.stderr)
    assert.equal(created.body.country, 'DE', 'the time zone’s country')
    assert.equal(created.body.country_set, false)
    const accountId = String(created.body.id)

    const file = path.join(dir, 'kunden.csv')
    writeFileSync(file, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(GERMAN, 'utf8')]))
    const imported = await cli(env, ['import', 'contacts', '--account', accountId, file, '--create-fields'])
    assert.equal(imported.code, 0, imported.stderr)
    assert.equal(imported.body.rows, 5)
    assert.equal(imported.body.created, 5, JSON.stringify(imported.body))
    assert.equal(imported.body.rejected, 0, JSON.stringify(imported.body.rejected_lines))
    assert.equal(imported.body.country, 'DE')
    assert.deepEqual(imported.body.created_fields, ['kundennummer'])

    // a number that is no Austrian one is refused with its line named when the file is read in AT
    const austrian = path.join(dir, 'wien.csv')
    writeFileSync(austrian, 'E-Mail;Telefon\r\nfranz@example.at;0664 1234567\r\nkurz@example.at;0664 1\r\n')
    const inAustria = await cli(env, ['import', 'contacts', '--account', accountId, austrian, '--country', 'at'])
    assert.equal(inAustria.code, 0, inAustria.stderr)
    assert.equal(inAustria.body.country, 'AT')
    assert.equal(inAustria.body.created, 1)
    assert.deepEqual(
      inAustria.body.rejected_lines.map((r: { line: number }) => r.line),
      [3],
    )
    assert.match(inAustria.body.rejected_lines[0].reason, /0664 1/)
    const badCountry = await cli(env, ['import', 'contacts', '--account', accountId, austrian, '--country', 'XY'])
    assert.notEqual(badCountry.code, 0)

    const database = await openDatabase({ dataDir: dir })
    try {
      const rows = await database.query<{ phone: string; email: string; fields: Record<string, unknown> }>(
        'SELECT phone, email, fields FROM contacts WHERE account_id = $1 ORDER BY phone',
        [accountId],
      )
      assert.deepEqual(
        rows.map((r) => r.phone).sort(),
        [
          '+4915112345678',
          '+4915234567890',
          '+4916098765432',
          '+491712345678',
          '+4917611122233',
          '+436641234567',
        ].sort(),
      )
      const anna = rows.find((r) => r.email === 'anna.schulz@example.de')
      assert.equal(anna?.fields.kundennummer, 'K-1001')
    } finally {
      await database.close()
    }

    // the CLI sets the country, and auto lets it follow the time zone again
    const set = await cli(env, ['accounts', 'set-country', accountId, 'at'])
    assert.equal(set.code, 0, set.stderr)
    assert.deepEqual([set.body.country, set.body.country_set], ['AT', true])
    const auto = await cli(env, ['accounts', 'set-country', accountId, 'auto'])
    assert.deepEqual([auto.body.country, auto.body.country_set], ['DE', false])
    const wrong = await cli(env, ['accounts', 'set-country', accountId, 'Deutschland'])
    assert.equal(wrong.code, 2)
  })
})
