import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createTestAccount, type Harness } from '../../test/helpers/harness.ts'
import { McpClients, toolFails, toolOk } from '../../test/helpers/mcp-client.ts'
import { harnessPerFile } from '../../test/helpers/test-file.ts'
import { createMember } from '../modules/people/index.ts'

// The inbox routing's tools (issue 48), made from the /app operations: opening hours and the away message,
// assignment settings, a member's availability; validated against each tool's outputSchema by the SDK's Client.

let harness: Harness
const mcpClients = new McpClients()

harnessPerFile({ mcp: mcpClients }, (created) => {
  harness = created
})

async function account() {
  const created = await createTestAccount(harness)
  return { ...created, client: await mcpClients.connect(created.key) }
}

test('opening hours, the away message and assignment through the tools; bad input in the envelope', async () => {
  const { client } = await account()
  const initial = await toolOk(client, 'get_inbox_routing')
  assert.deepEqual(initial.assignment, { mode: 'off', limit: 10 })
  assert.equal(initial.open_now, true)
  const hours = await toolOk(client, 'update_opening_hours', {
    enabled: true,
    timezone: 'Europe/Berlin',
    weekly: { sat: [{ from: '10:00', to: '14:00' }] },
    days_off: ['2026-12-24'],
    away_enabled: true,
    away_message: 'Wir melden uns morgen.',
  })
  assert.deepEqual(hours.hours.weekly.sat, [{ from: '10:00', to: '14:00' }])
  assert.deepEqual(hours.hours.weekly.mon, [])
  assert.equal(hours.away.interval_minutes, 720)
  await toolFails(client, 'update_opening_hours', { timezone: 'Mars/Olympus' }, 'bad_request', 'invalid_timezone')
  const assignment = await toolOk(client, 'update_assignment_settings', { mode: 'round_robin', limit: 3 })
  assert.deepEqual(assignment.assignment, { mode: 'round_robin', limit: 3 })
})

test('availability: a key names the member; another account’s member is a 404', async () => {
  const { accountId, client } = await account()
  const other = await account()
  const person = await createMember(harness.database.orm, {
    accountId,
    email: `tool-${Date.now()}@example.org`,
    name: 'Toni',
    password: 'tool password 12',
    role: 'member',
  })
  await toolFails(client, 'set_member_availability', { available: true }, 'bad_request', 'member_id_required')
  const set = await toolOk(client, 'set_member_availability', { available: true, member_id: person.id })
  assert.equal(set.member.available, true)
  const listed = await toolOk(client, 'list_member_availability')
  assert.deepEqual(
    listed.members.map((m: Record<string, unknown>) => [m.name, m.available]),
    [['Toni', true]],
  )
  await toolFails(other.client, 'set_member_availability', { available: true, member_id: person.id }, 'not_found')
})
