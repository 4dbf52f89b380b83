import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { loadConfig } from '../config.ts'
import { ImportError, importConcurrency, importContacts } from '../modules/contacts/index.ts'
import { SequenceBody, type SequenceInput } from '../modules/followups/index.ts'
import {
  AdminError,
  accountView,
  blockAccount,
  createAccount,
  createApiKey,
  getAccount,
  listAccounts,
  listApiKeys,
  listPlans,
  pauseSending,
  resumeSending,
  revokeApiKey,
  setAccountCountry,
  setAccountPlan,
  setPlan,
  unblockAccount,
} from '../platform/auth/accounts.service.ts'
import { parseScopes } from '../platform/auth/scopes.ts'
import { systemClock } from '../platform/clock.ts'
import { writeBackup } from '../platform/db/backup.ts'
import type { Database } from '../platform/db/client.ts'
import { migrate } from '../platform/db/migrate.ts'
import { refuseUnknownFields } from '../platform/http/strict-input.ts'
import { buildServices, type Services, setEventReactions } from '../services.ts'
import { asCommand, type CommandIO, type DataCommand, type Result, type Values } from './command.ts'
import { statusCommand } from './status.command.ts'
import { userCommands } from './users.commands.ts'

export type { CommandIO, DataCommand }

const str = (values: Values, name: string): string => {
  const value = values[name]
  if (typeof value !== 'string' || value === '') throw new AdminError(`--${name} is required`)
  return value
}
const optStr = (values: Values, name: string): string | undefined => {
  const value = values[name]
  return typeof value === 'string' && value !== '' ? value : undefined
}
const int = (values: Values, name: string): number => {
  const raw = str(values, name)
  if (!/^\d+$/.test(raw)) throw new AdminError(`--${name} must be a whole number >= 0, got "${raw}"`)
  return Number(raw)
}
const arg = (positionals: string[], index: number, name: string): string => {
  const value = positionals[index]
  if (!value) throw new AdminError(`${name} is required`)
  return value
}

const accountLine = (a: Result) =>
  `${a.id}  ${a.name}  plan=${a.plan}  status=${a.status}${a.sending_paused ? '  sending=paused' : ''}  ${a.language} ${a.timezone} country=${a.country ?? 'none'}${a.country_set ? '' : ' (from the time zone)'}`

const accountChange = (
  summary: string,
  example: string,
  change: (db: Database, id: string) => Promise<Result>,
): DataCommand => ({
  usage: 'ID',
  summary,
  example,
  positionals: ['ID'],
  run: (database, _values, positionals) => change(database, arg(positionals, 0, 'ID')),
  human: (result) => accountLine(result),
})

export const dataCommands: Record<string, DataCommand> = {
  status: statusCommand,
  backup: {
    usage: '--out FILE',
    example: 'herold backup --out herold-$(date +%F).backup',
    summary:
      'Back up the embedded data directory (the database and secret.key) into FILE, also while the server runs; on a PostgreSQL server use pg_dump',
    options: { out: { type: 'string', description: 'the backup file to write (must not exist)' } },
    prepare(values) {
      if (typeof values.out === 'string' && values.out !== '') values.out = path.resolve(values.out)
    },
    async run(database, values, _positionals, io) {
      const out = str(values, 'out')
      if (!database.dumpDataDir || !io?.config) {
        throw new AdminError(
          'herold backup copies the embedded data directory; with DATABASE_URL back up with pg_dump (docs/operations.md)',
        )
      }
      try {
        const written = await writeBackup({
          dump: await database.dumpDataDir(),
          dataDir: io.config.dataDir,
          out,
          now: systemClock.now(),
        })
        return { ...written }
      } catch (error) {
        throw new AdminError((error as Error).message)
      }
    },
    human: (r) =>
      `wrote ${r.out} (${Math.round(Number(r.bytes) / 1024)} KiB)${r.secret_key_included ? ', secret.key included' : '; secret.key not included: the key comes from HEROLD_SECRET_KEY, keep it with the backup'}`,
  },
  migrate: {
    usage: '',
    example: 'DATABASE_URL=postgres://herold@db:5432/herold herold migrate',
    summary: 'Apply the database migrations that are missing',
    async run(database) {
      return { applied: await migrate(database) }
    },
    human: (r) => ((r.applied as string[]).length ? `applied: ${(r.applied as string[]).join(', ')}` : 'up to date'),
  },
  'accounts create': {
    usage: '--name NAME [--plan NAME] [--language de] [--timezone Europe/Berlin] [--country DE]',
    example: 'herold accounts create --name "Bäckerei Schulz" --plan pro --timezone Europe/Berlin',
    summary: 'Create an account',
    options: {
      name: { type: 'string', description: 'the account name' },
      plan: { type: 'string', description: 'plan name (default: default)' },
      language: { type: 'string', description: 'language code (default: de)' },
      timezone: { type: 'string', description: 'IANA timezone (default: Europe/Berlin)' },
      country: {
        type: 'string',
        description: 'ISO 3166-1 alpha-2 country of national phone numbers (default: the time zone’s, such as DE)',
      },
    },
    async run(database, values) {
      const account = await createAccount(database.orm, {
        name: str(values, 'name'),
        plan: optStr(values, 'plan'),
        language: optStr(values, 'language'),
        timezone: optStr(values, 'timezone'),
        country: optStr(values, 'country'),
      })
      return { ...accountView(account) }
    },
    human: accountLine,
  },
  'accounts list': {
    usage: '',
    example: 'herold accounts list --json',
    summary: 'List every account',
    async run(database) {
      return { accounts: (await listAccounts(database.orm)).map(accountView) }
    },
    human: (r) => (r.accounts as Result[]).map(accountLine).join('\n') || 'no accounts',
  },
  'accounts block': accountChange(
    'Block an account: every API request answers 403 account_blocked',
    'herold accounts block "$ACCOUNT_ID"',
    async (d, id) => accountView(await blockAccount(d.orm, id)),
  ),
  'accounts unblock': accountChange('Unblock an account', 'herold accounts unblock "$ACCOUNT_ID"', async (d, id) =>
    accountView(await unblockAccount(d.orm, id)),
  ),
  'accounts pause-sending': accountChange(
    'Pause sending (403 subscription_locked)',
    'herold accounts pause-sending "$ACCOUNT_ID"',
    async (d, id) => accountView(await pauseSending(d.orm, id)),
  ),
  'accounts resume-sending': accountChange(
    'Resume sending',
    'herold accounts resume-sending "$ACCOUNT_ID"',
    async (d, id) => accountView(await resumeSending(d.orm, id)),
  ),
  'accounts set-plan': {
    usage: 'ID PLAN',
    example: 'herold accounts set-plan "$ACCOUNT_ID" pro',
    summary: 'Move an account to another plan',
    positionals: ['ID', 'PLAN'],
    async run(database, _values, positionals) {
      return accountView(await setAccountPlan(database.orm, arg(positionals, 0, 'ID'), arg(positionals, 1, 'PLAN')))
    },
    human: accountLine,
  },
  'accounts set-country': {
    usage: 'ID COUNTRY|auto',
    example: 'herold accounts set-country "$ACCOUNT_ID" DE',
    summary:
      'Set the country (ISO 3166-1 alpha-2) national phone numbers are read in; auto: the time zone’s (Europe/Berlin: DE)',
    positionals: ['ID', 'COUNTRY'],
    async run(database, _values, positionals) {
      const country = arg(positionals, 1, 'COUNTRY')
      return accountView(
        await setAccountCountry(database.orm, arg(positionals, 0, 'ID'), country === 'auto' ? null : country),
      )
    },
    human: accountLine,
  },
  'keys create': {
    usage: '--account ID --name NAME --scopes LIST|all',
    example: 'herold keys create --account "$ACCOUNT_ID" --name zapier --scopes contacts:read,contacts:write',
    summary: 'Create an API key; the secret is shown only this once',
    options: {
      account: { type: 'string', description: 'account id' },
      name: { type: 'string', description: 'a label for the key' },
      scopes: { type: 'string', description: 'comma-separated scopes, or "all"' },
    },
    async run(database, values) {
      let scopes: ReturnType<typeof parseScopes>
      try {
        scopes = parseScopes(str(values, 'scopes'))
      } catch (error) {
        throw new AdminError((error as Error).message)
      }
      const key = await createApiKey(database.orm, {
        accountId: str(values, 'account'),
        name: str(values, 'name'),
        scopes,
      })
      return {
        id: key.id,
        name: key.name,
        prefix: key.prefix,
        key: key.key,
        scopes: key.scopes,
        account_id: key.account_id,
      }
    },
    human: (r) =>
      `API key ${r.id} (${r.name}), scopes: ${(r.scopes as string[]).join(',')}\n\n  ${r.key}\n\nStore it now: it is not shown again.`,
  },
  'keys list': {
    usage: '--account ID',
    example: 'herold keys list --account "$ACCOUNT_ID"',
    summary: "List an account's API keys (prefixes only)",
    options: { account: { type: 'string', description: 'account id' } },
    async run(database, values) {
      return { keys: await listApiKeys(database.orm, str(values, 'account')) }
    },
    human: (r) =>
      (r.keys as Result[])
        .map((k) => `${k.id}  ${k.prefix}…  ${k.name}  ${k.revoked_at ? `revoked ${k.revoked_at}` : 'active'}`)
        .join('\n') || 'no keys',
  },
  'keys revoke': {
    usage: 'ID',
    example: 'herold keys revoke "$KEY_ID"',
    summary: 'Revoke an API key: it answers 401 from now on',
    positionals: ['ID'],
    async run(database, _values, positionals) {
      return { ...(await revokeApiKey(database.orm, arg(positionals, 0, 'ID'))) }
    },
    human: (r) => `revoked ${r.id} (${r.prefix}…)`,
  },
  'plans set': {
    usage: 'NAME --contacts N --messages-per-month N --webhooks N [--requests-per-minute N]',
    example: 'herold plans set pro --contacts 100000 --messages-per-month 50000 --webhooks 10',
    summary: 'Create or change a plan (requests per minute per API key: default 120, kept when omitted)',
    positionals: ['NAME'],
    options: {
      contacts: { type: 'string', description: 'contact limit' },
      'messages-per-month': { type: 'string', description: 'monthly message quota' },
      webhooks: { type: 'string', description: 'maximum webhook subscriptions' },
      'requests-per-minute': { type: 'string', description: 'API requests per minute per key (1 or more)' },
    },
    async run(database, values, positionals) {
      const plan = await setPlan(database.orm, {
        name: arg(positionals, 0, 'NAME'),
        contactsLimit: int(values, 'contacts'),
        messagesPerMonth: int(values, 'messages-per-month'),
        webhooksLimit: int(values, 'webhooks'),
        requestsPerMinute: values['requests-per-minute'] === undefined ? undefined : int(values, 'requests-per-minute'),
      })
      return planView(plan)
    },
    human: planLine,
  },
  'import contacts': {
    usage: '--account ID FILE.csv [--map C=F,…] [--delimiter D] [--encoding E] [--create-fields] [--country CC]',
    example: 'herold import contacts --account "$ACCOUNT_ID" kunden.csv --map Mobil=phone,Rufname=first_name',
    summary:
      'Import contacts from a CSV file, upserting by email or phone (encoding, delimiter and the header names of Excel, Mailchimp, Brevo, HubSpot, Shopify detected)',
    positionals: ['FILE.csv'],
    options: {
      account: { type: 'string', description: 'account id' },
      map: {
        type: 'string',
        description:
          'header names to fields, such as "Mobil=phone,Kundennummer=customer_no" (name, first_name, last_name, email, phone, tags, or a custom field key)',
      },
      'create-fields': {
        type: 'boolean',
        description: 'make every column that fills nothing else a new text field (key from the header) first',
      },
      delimiter: { type: 'string', description: 'the delimiter instead of detecting it: , ; | or tab' },
      encoding: {
        type: 'string',
        description: 'the encoding instead of detecting it: utf-8, utf-16le, utf-16be or cp1252',
      },
      country: {
        type: 'string',
        description:
          'the country national phone numbers of this file are in (ISO 3166-1 alpha-2; default: the account’s)',
      },
    },
    prepare(_values, positionals) {
      const file = arg(positionals, 0, 'FILE.csv')
      if (!existsSync(file)) throw new AdminError(`no such file: ${file}`)
      // the server reading it may run in another directory
      positionals[0] = path.resolve(file)
    },
    async run(database, values, positionals, io) {
      // the imported contacts' signals and events reach the modules that react to them (automations, webhooks)
      setEventReactions()
      try {
        const report = await importContacts(database.orm, systemClock, {
          accountId: str(values, 'account'),
          file: arg(positionals, 0, 'FILE.csv'),
          format: {
            map: values.map as string | undefined,
            delimiter: values.delimiter as string | undefined,
            encoding: values.encoding as string | undefined,
            createFields: values['create-fields'] === true,
            country: values.country as string | undefined,
          },
          ...importConcurrency(database.kind),
          onProgress: io?.progress
            ? (p) => io.progress?.(p.bytes, p.totalBytes, `${p.rows.toLocaleString('en')} rows`)
            : undefined,
        })
        return { ...report }
      } catch (error) {
        if (error instanceof ImportError) throw new AdminError(error.message)
        throw error
      }
    },
    human: (r) => {
      const rejected = r.rejected_lines as Array<{ line: number; reason: string }>
      const notes = r.notes as Array<{ line: number; note: string }>
      const ignored = (r.ignored_columns as string[] | undefined) ?? []
      const created = (r.created_fields as string[] | undefined) ?? []
      const fieldColumns = (r.field_columns as Array<{ column: string; field: string }> | undefined) ?? []
      return [
        `created ${r.created}, updated ${r.updated}, unchanged ${r.unchanged}, rejected ${r.rejected} of ${r.rows} rows`,
        ...rejected.slice(0, 50).map((x) => `  line ${x.line}: rejected, ${x.reason}`),
        ...(rejected.length > 50 ? [`  … ${(r.rejected as number) - 50} more rejected lines (see --json)`] : []),
        ...notes.slice(0, 20).map((x) => `  line ${x.line}: ${x.note}`),
        ...(notes.length > 20 ? [`  … ${notes.length - 20} more notes (see --json)`] : []),
        ...(created.length > 0 ? [`  text fields created: ${created.join(', ')}`] : []),
        ...(fieldColumns.length > 0
          ? [`  custom fields: ${fieldColumns.map((c) => `${c.column} → ${c.field}`).join(', ')}`]
          : []),
        ...(ignored.length > 0
          ? [`  columns ignored: ${ignored.join(', ')} (name them with --map, or --create-fields)`]
          : []),
        `${r.seconds} s, ${(r.rows_per_second as number).toLocaleString('en')} rows/s`,
      ].join('\n')
    },
  },
  ...channelCommands(),
  'followups create': {
    usage: '--account ID --file sequence.json',
    example: 'herold followups create --account "$ACCOUNT_ID" --file welcome-sequence.json',
    summary:
      'Create a follow-up sequence (a draft) with its steps from a JSON file: {name, trigger?, steps: [{text, delay: {amount, unit: hours|days}, send_time?}]}; each step becomes a marketing template, submitted when a chat number is connected',
    options: {
      account: { type: 'string', description: 'account id' },
      file: { type: 'string', description: 'the sequence as JSON (see docs/followups.md)' },
    },
    prepare(values) {
      const file = str(values, 'file')
      if (!existsSync(file)) throw new AdminError(`no such file: ${file}`)
      // the server reading it may run in another directory
      values.file = path.resolve(file)
    },
    async run(database, values, _positionals, io) {
      const account = await getAccount(database.orm, str(values, 'account'))
      let input: SequenceInput
      try {
        input = JSON.parse(readFileSync(str(values, 'file'), 'utf8')) as SequenceInput
      } catch (error) {
        throw new AdminError(`the file is not valid JSON: ${(error as Error).message}`)
      }
      if (input === null || typeof input !== 'object' || Array.isArray(input)) {
        throw new AdminError('the file must hold one JSON object: {name, trigger?, steps: [...]}')
      }
      return asCommand(async () => {
        // strict as the API: a misspelt field in the file is named, not dropped
        refuseUnknownFields(SequenceBody, input, 'file')
        return withServices(database, io, ({ followups }) =>
          followups.create({ accountId: account.id, account: { language: account.language } }, input),
        )
      })
    },
    human: (r) => {
      const steps = r.steps as Array<{ position: number; delay: { amount: number; unit: string }; approval: string }>
      return [
        `follow-up ${r.id} (${r.name}) created as ${r.status}; activate it with PATCH /v1/followups/${r.id} {"status":"active"}`,
        ...steps.map((s) => `  step ${s.position}: after ${s.delay.amount} ${s.delay.unit}, template ${s.approval}`),
      ].join('\n')
    },
  },
  ...userCommands(),
  'plans list': {
    usage: '',
    example: 'herold plans list',
    summary: 'List the plans',
    async run(database) {
      return { plans: (await listPlans(database.orm)).map(planView) }
    },
    human: (r) => (r.plans as Result[]).map(planLine).join('\n'),
  },
}

/** Runs one call on the services of the composition root (src/services.ts), closed after it. */
async function withServices<T>(
  database: Database,
  io: CommandIO | undefined,
  call: (services: Services) => Promise<T>,
): Promise<T> {
  const services = buildServices({ config: io?.config ?? loadConfig(), database, clock: systemClock })
  try {
    return await call(services)
  } finally {
    await services.close()
  }
}

const MIME_BY_EXTENSION: Record<string, string> = {
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.png': 'image/png',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.mp4': 'video/mp4',
  '.ogg': 'audio/ogg',
  '.mp3': 'audio/mpeg',
  '.pdf': 'application/pdf',
  '.txt': 'text/plain',
}

function channelCommands(): Record<string, DataCommand> {
  return {
    'channels connect': {
      usage:
        '--account ID --provider sandbox|whatsapp-cloud|smtp [--channel chat|email] [--phone-number-id --waba-id --access-token --app-secret --verify-token --display-phone] [--messages-per-second N] [--daily-limit N|unlimited] [--sandbox-refuse-above N] [--smtp-url URL --from ADDRESS]',
      example:
        'herold channels connect --account "$ACCOUNT_ID" --provider sandbox\nherold channels connect --account "$ACCOUNT_ID" --channel email --provider smtp \\\n  --smtp-url smtp://user:pass@mail.example.org:587 --from news@example.org',
      summary: 'Connect a chat number or an e-mail channel; credentials are stored encrypted',
      options: {
        account: { type: 'string', description: 'account id' },
        channel: { type: 'string', description: 'chat (default) or email' },
        provider: { type: 'string', description: 'chat: sandbox or whatsapp-cloud; email: sandbox or smtp' },
        'phone-number-id': { type: 'string', description: 'whatsapp-cloud: the phone number id' },
        'waba-id': { type: 'string', description: 'whatsapp-cloud: the WhatsApp Business Account id' },
        'access-token': { type: 'string', description: 'whatsapp-cloud: the system user access token' },
        'app-secret': { type: 'string', description: 'whatsapp-cloud: the app secret (checks X-Hub-Signature-256)' },
        'verify-token': { type: 'string', description: "whatsapp-cloud: the webhook's verify token" },
        'display-phone': { type: 'string', description: 'the business number as shown, E.164' },
        'messages-per-second': { type: 'string', description: 'outbound pacing, 1 to 1000 (default 80)' },
        'daily-limit': {
          type: 'string',
          description:
            "chat: new conversations per 24 hours, WhatsApp's tier (250, 1000, 10000, 100000) or unlimited (default)",
        },
        'sandbox-refuse-above': {
          type: 'string',
          description:
            'chat sandbox: refuse messages beyond N a second like the Cloud API (130429), to see the pace adapt',
        },
        'smtp-url': { type: 'string', description: 'smtp: smtp://user:password@host:port' },
        from: { type: 'string', description: 'email: the sender address' },
      },
      async run(database, values, _positionals, io) {
        const channel = (optStr(values, 'channel') ?? 'chat') as 'chat' | 'email'
        if (channel !== 'chat' && channel !== 'email') throw new AdminError('--channel must be chat or email')
        const rate = optStr(values, 'messages-per-second')
        const daily = optStr(values, 'daily-limit')
        const dailyLimit = daily === undefined || daily === 'unlimited' ? null : Number(daily)
        const refuseAbove = optStr(values, 'sandbox-refuse-above')
        if (dailyLimit !== null && !Number.isInteger(dailyLimit)) {
          throw new AdminError('--daily-limit must be a whole number or unlimited')
        }
        return asCommand(() =>
          withServices(database, io, ({ channels }) =>
            channels.connect(str(values, 'account'), {
              channel,
              provider: str(values, 'provider'),
              address: optStr(values, channel === 'chat' ? 'display-phone' : 'from'),
              phoneNumberId: optStr(values, 'phone-number-id'),
              wabaId: optStr(values, 'waba-id'),
              accessToken: optStr(values, 'access-token'),
              appSecret: optStr(values, 'app-secret'),
              verifyToken: optStr(values, 'verify-token'),
              smtpUrl: optStr(values, 'smtp-url'),
              messagesPerSecond: rate === undefined ? undefined : Number(rate),
              dailyLimit,
              sandboxRefuseAbove: refuseAbove === undefined ? null : Number(refuseAbove),
            }),
          ),
        )
      },
      human: (r) =>
        `${r.channel} connected through ${r.provider} (${r.address || 'no address'})\ninbound: ${r.inbound_url}`,
    },
    'channels disconnect': {
      usage: '--account ID [--channel chat|email]',
      example: 'herold channels disconnect --account "$ACCOUNT_ID" --channel email',
      summary: 'Disconnect a channel: nothing goes out on it any more',
      options: {
        account: { type: 'string', description: 'account id' },
        channel: { type: 'string', description: 'chat (default) or email' },
      },
      async run(database, values, _positionals, io) {
        const channel = (optStr(values, 'channel') ?? 'chat') as 'chat' | 'email'
        return asCommand(() =>
          withServices(database, io, ({ channels }) => channels.disconnect(str(values, 'account'), channel)),
        )
      },
      human: (r) => `${r.channel} disconnected`,
    },
    'sandbox inbound': {
      usage: '--account ID --from PHONE (--text TEXT | --button LABEL | --media FILE [--text CAPTION])',
      example: 'herold sandbox inbound --account "$ACCOUNT_ID" --from +4915112345678 --text "Hallo!"',
      summary: 'Simulate a customer message to the sandbox chat number',
      options: {
        account: { type: 'string', description: 'account id' },
        from: { type: 'string', description: "the customer's phone number, international format" },
        name: { type: 'string', description: "the customer's profile name" },
        text: { type: 'string', description: 'a text message, or the caption of --media' },
        button: { type: 'string', description: 'a quick-reply button press' },
        media: { type: 'string', description: 'a file to send as image, video, audio or document' },
      },
      prepare(values) {
        const media = optStr(values, 'media')
        if (media === undefined) return
        if (!existsSync(media)) throw new AdminError(`no such file: ${media}`)
        values.media = path.resolve(media)
      },
      async run(database, values, _positionals, io) {
        const media = optStr(values, 'media')
        const text = optStr(values, 'text')
        const button = optStr(values, 'button')
        if (!media && !button && text === undefined) throw new AdminError('give --text, --button or --media')
        if (button && (media || text)) throw new AdminError('--button goes alone')
        const file = media
          ? {
              data_base64: readFileSync(media).toString('base64'),
              mime: MIME_BY_EXTENSION[path.extname(media).toLowerCase()] ?? 'application/octet-stream',
              filename: path.basename(media),
            }
          : undefined
        return asCommand(() =>
          withServices(database, io, ({ channels }) =>
            channels.sandboxInbound(str(values, 'account'), {
              from: str(values, 'from'),
              name: optStr(values, 'name'),
              text,
              button,
              media: file,
            }),
          ),
        )
      },
      human: (r) => (r.stored ? 'stored 1 inbound message' : 'nothing stored (duplicate)'),
    },
  }
}

function planView(p: Awaited<ReturnType<typeof setPlan>>): Result {
  return {
    name: p.name,
    contacts: p.contactsLimit,
    messages_per_month: p.messagesPerMonth,
    webhooks: p.webhooksLimit,
    requests_per_minute: p.requestsPerMinute,
  }
}

function planLine(p: Result): string {
  return `${p.name}  contacts=${p.contacts}  messages/month=${p.messages_per_month}  webhooks=${p.webhooks}  requests/minute=${p.requests_per_minute}`
}

/** Parses a data command's own arguments (after its name). */
export function parseCommandArgs(command: DataCommand, argv: string[]): { values: Values; positionals: string[] } {
  const options: Record<string, { type: 'string' | 'boolean' }> = {
    json: { type: 'boolean' },
    help: { type: 'boolean' },
  }
  for (const [name, spec] of Object.entries(command.options ?? {})) options[name] = { type: spec.type }
  try {
    const parsed = parseArgs({ args: argv, options, allowPositionals: true, strict: true })
    return { values: parsed.values as Values, positionals: parsed.positionals }
  } catch (error) {
    throw new AdminError((error as Error).message)
  }
}

export { AdminError, getAccount }
