import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { type ReactNode, useState } from 'react'
import { app, call, v1 } from '../../api/client.ts'
import { Field, formatTime, handleSubmit, TextField } from '../../ui/components.tsx'
import { fill, useI18n, useWords } from '../../ui/i18n.tsx'
import { PageError } from '../../ui/page-error.tsx'
import type { Answer } from '../../ui/query.ts'
import type { SessionShape } from '../../ui/session.ts'
import { SavedRepliesSettings } from '../replies/saved-replies-settings.tsx'
import { RoutingSettings } from '../routing/routing-settings.tsx'
import { CustomFields } from './custom-fields.tsx'
import {
  accountQuery,
  channelsQuery,
  chatChannelQuery,
  coexistenceQuery,
  consentSettingsQuery,
  followupTimingQuery,
  sendingSettingsQuery,
} from './queries.ts'
import { errors, words } from './words.ts'

// Settings: the channels' state (connecting a number is the CLI's job), coexistence, consent keywords and the
// landing page's text, and follow-up timing.

const list = (text: string) =>
  text
    .split(',')
    .map((k) => k.trim())
    .filter((k) => k !== '')

export function SettingsPage({ session }: { session: SessionShape }) {
  const w = useWords(words)
  const canWrite = session.scopes.includes('settings:write')
  return (
    <main>
      <h1>{w.title}</h1>
      {!canWrite && <p>{w.readOnly}</p>}
      <Channels canWrite={canWrite} />
      <Consent canWrite={canWrite} />
      <Country canWrite={canWrite} />
      <FollowupTiming canWrite={canWrite} />
      <SendingProtection canWrite={canWrite} />
      <CustomFields canWrite={canWrite} />
      <RoutingSettings canWrite={canWrite} />
      <SavedRepliesSettings canWrite={session.scopes.includes('messages:write')} />
    </main>
  )
}

function Channels({ canWrite }: { canWrite: boolean }) {
  const w = useWords(words)
  const e = useWords(errors)
  const queryClient = useQueryClient()
  const channels = useQuery(channelsQuery)
  const chat = useQuery(chatChannelQuery)
  const coexistence = useQuery(coexistenceQuery)
  const change = useMutation({
    mutationFn: (enabled: boolean) => call(v1.PATCH('/v1/settings/coexistence', { body: { enabled } })),
    onSuccess: (result) => {
      queryClient.setQueryData(coexistenceQuery.queryKey, result)
      void queryClient.invalidateQueries({ queryKey: channelsQuery.queryKey })
      void queryClient.invalidateQueries({ queryKey: chatChannelQuery.queryKey })
    },
  })
  const c = channels.data
  const state = (channel: { connected: boolean; provider?: string | null; address?: string | null }) =>
    channel.connected
      ? fill(w.connected, { provider: channel.provider ?? '', address: channel.address ?? '' })
      : w.notConnected
  return (
    <section aria-labelledby="channels-title">
      <h2 id="channels-title">{w.channels}</h2>
      <PageError error={channels.error} words={e} />
      {c && (
        <dl className="details">
          <dt>{w.chat}</dt>
          <dd data-testid="chat-state">{state(c.chat)}</dd>
          <dt>{w.email}</dt>
          <dd>{state(c.email)}</dd>
          <dt>{w.canSend}</dt>
          <dd>{c.versand_moeglich ? w.yes : w.no}</dd>
          {chat.data?.connected && <SendingPace chat={chat.data} />}
        </dl>
      )}
      {c?.sending_paused && <p>{w.sendingPaused}</p>}
      <h3>{w.coexistence}</h3>
      <PageError error={coexistence.error ?? change.error} words={e} />
      {coexistence.data && !coexistence.data.available && <p>{w.coexistenceUnavailable}</p>}
      {coexistence.data?.available && (
        <>
          <label className="check">
            <input
              type="checkbox"
              checked={coexistence.data.enabled}
              disabled={!canWrite || change.isPending}
              onChange={(event) => change.mutate(event.target.checked)}
            />
            {w.coexistenceLabel}
          </label>
          {coexistence.data.messages_per_second !== null && (
            <p role="status">{fill(w.pace, { rate: String(coexistence.data.messages_per_second) })}</p>
          )}
        </>
      )}
    </section>
  )
}

/** The number's pace: as set, or lower (and since when, and why) after throughput refusals. */
function SendingPace({ chat }: { chat: NonNullable<Answer<typeof chatChannelQuery>> }) {
  const w = useWords(words)
  const { language } = useI18n()
  const { current, lowered_reason, lowered_since } = chat.pace
  const full = chat.messages_per_second ?? 0
  return (
    <>
      <dt>{w.sendingPace}</dt>
      <dd data-testid="sending-pace">
        {lowered_reason && current !== null
          ? fill(w.paceLowered, { current, full, since: formatTime(lowered_since, language, '–') })
          : fill(w.paceFull, { rate: current ?? full })}
      </dd>
    </>
  )
}

function Consent({ canWrite }: { canWrite: boolean }) {
  const w = useWords(words)
  const consent = useQuery(consentSettingsQuery)
  const e = useWords(errors)
  return (
    <section aria-labelledby="consent-title">
      <h2 id="consent-title">{w.consent}</h2>
      <PageError error={consent.error} words={e} />
      {consent.data && <ConsentForm key={JSON.stringify(consent.data)} data={consent.data} canWrite={canWrite} />}
    </section>
  )
}

type ConsentData = Answer<typeof consentSettingsQuery>

function ConsentForm({ data, canWrite }: { data: ConsentData; canWrite: boolean }) {
  const w = useWords(words)
  const queryClient = useQueryClient()
  const [start, setStart] = useState(data.start_keywords.join(', '))
  const [stop, setStop] = useState(data.stop_keywords.join(', '))
  const [stopConfirmation, setStopConfirmation] = useState(data.stop_confirmation)
  const [landing, setLanding] = useState(data.landing_consent_text)
  const save = useMutation({
    mutationFn: () =>
      call(
        v1.PATCH('/v1/settings/consent', {
          body: {
            start_keywords: list(start),
            stop_keywords: list(stop),
            stop_confirmation: stopConfirmation,
            landing_consent_text: landing,
          },
        }),
      ),
    // the form keeps what was typed; the next visit reads the stored settings
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: consentSettingsQuery.queryKey, refetchType: 'none' })
    },
  })
  return (
    <SaveForm save={save} canWrite={canWrite}>
      <TextField label={w.startKeywords} required value={start} readOnly={!canWrite} onChange={setStart} />
      <TextField label={w.stopKeywords} required value={stop} readOnly={!canWrite} onChange={setStop} />
      <Field label={w.stopConfirmation}>
        <textarea
          required
          maxLength={1000}
          rows={2}
          value={stopConfirmation}
          onChange={(ev) => setStopConfirmation(ev.target.value)}
          readOnly={!canWrite}
        />
      </Field>
      <Field label={w.landingText}>
        <textarea
          required
          maxLength={2000}
          rows={3}
          value={landing}
          onChange={(ev) => setLanding(ev.target.value)}
          readOnly={!canWrite}
        />
      </Field>
      <dl className="details">
        <dt>{w.landingPage}</dt>
        <dd>
          <a href={data.landing_page_url}>{data.landing_page_url}</a>
        </dd>
        <dt>{w.optinTemplate}</dt>
        <dd>
          {data.optin_confirm_template
            ? `${data.optin_confirm_template.name} (${data.optin_confirm_template.language})`
            : w.noOptinTemplate}
        </dd>
      </dl>
      {data.chat_optins_without_template > 0 && (
        <p>{fill(w.waiting, { count: String(data.chat_optins_without_template) })}</p>
      )}
    </SaveForm>
  )
}

function FollowupTiming({ canWrite }: { canWrite: boolean }) {
  const w = useWords(words)
  const e = useWords(errors)
  const timing = useQuery(followupTimingQuery)
  return (
    <section aria-labelledby="followups-title">
      <h2 id="followups-title">{w.followups}</h2>
      <PageError error={timing.error} words={e} />
      {timing.data && <TimingForm key={JSON.stringify(timing.data)} data={timing.data} canWrite={canWrite} />}
    </section>
  )
}

type TimingData = Answer<typeof followupTimingQuery>

function TimingForm({ data, canWrite }: { data: TimingData; canWrite: boolean }) {
  const w = useWords(words)
  const queryClient = useQueryClient()
  const [fixed, setFixed] = useState(data.send_time !== null)
  const [time, setTime] = useState(data.send_time ?? '10:00')
  const [timezone, setTimezone] = useState(data.timezone)
  const save = useMutation({
    mutationFn: () =>
      call(v1.PATCH('/v1/settings/followup-timing', { body: { send_time: fixed ? time : null, timezone } })),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: followupTimingQuery.queryKey, refetchType: 'none' })
    },
  })
  return (
    <SaveForm save={save} canWrite={canWrite}>
      <fieldset>
        <legend>{w.followups}</legend>
        <label className="check">
          <input type="radio" name="fixed" checked={!fixed} onChange={() => setFixed(false)} disabled={!canWrite} />
          {w.noFixedTime}
        </label>
        <label className="check">
          <input type="radio" name="fixed" checked={fixed} onChange={() => setFixed(true)} disabled={!canWrite} />
          {w.fixedTime}
        </label>
      </fieldset>
      {fixed && (
        <TextField
          label={w.sendTime}
          required
          pattern="([01][0-9]|2[0-3]):[0-5][0-9]"
          value={time}
          readOnly={!canWrite}
          onChange={setTime}
        />
      )}
      <TextField
        label={w.timezone}
        required
        maxLength={64}
        value={timezone}
        readOnly={!canWrite}
        onChange={setTimezone}
      />
      {data.steps.length > 0 && <p>{fill(w.stepTimes, { count: String(data.steps.length) })}</p>}
    </SaveForm>
  )
}

/** The frequency cap and quiet hours of marketing sends. */
function SendingProtection({ canWrite }: { canWrite: boolean }) {
  const w = useWords(words)
  const e = useWords(errors)
  const protection = useQuery(sendingSettingsQuery)
  return (
    <section aria-labelledby="protection-title">
      <h2 id="protection-title">{w.protection}</h2>
      <p>{w.protectionHelp}</p>
      <PageError error={protection.error} words={e} />
      {protection.data && (
        <ProtectionForm key={JSON.stringify(protection.data)} data={protection.data} canWrite={canWrite} />
      )}
    </section>
  )
}

type ProtectionData = Answer<typeof sendingSettingsQuery>

function ProtectionForm({ data, canWrite }: { data: ProtectionData; canWrite: boolean }) {
  const w = useWords(words)
  const queryClient = useQueryClient()
  const [capOn, setCapOn] = useState(data.frequency_cap.enabled)
  const [messages, setMessages] = useState(String(data.frequency_cap.max_messages))
  const [hours, setHours] = useState(String(data.frequency_cap.window_hours))
  const [quietOn, setQuietOn] = useState(data.quiet_hours.enabled)
  const [from, setFrom] = useState(data.quiet_hours.from)
  const [to, setTo] = useState(data.quiet_hours.to)
  const save = useMutation({
    mutationFn: () =>
      call(
        v1.PATCH('/v1/settings/sending', {
          body: {
            frequency_cap: { enabled: capOn, max_messages: Number(messages), window_hours: Number(hours) },
            quiet_hours: { enabled: quietOn, from, to },
          },
        }),
      ),
    // the form keeps what was typed; the next visit reads the stored settings
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: sendingSettingsQuery.queryKey, refetchType: 'none' })
    },
  })
  const time = '([01][0-9]|2[0-3]):[0-5][0-9]'
  return (
    <SaveForm save={save} canWrite={canWrite}>
      <label className="check">
        <input type="checkbox" checked={capOn} disabled={!canWrite} onChange={(ev) => setCapOn(ev.target.checked)} />
        {w.capEnabled}
      </label>
      <TextField
        label={w.capMessages}
        type="number"
        min={1}
        max={100}
        required
        value={messages}
        readOnly={!canWrite}
        onChange={setMessages}
      />
      <TextField
        label={w.capWindow}
        type="number"
        min={1}
        max={720}
        required
        value={hours}
        readOnly={!canWrite}
        onChange={setHours}
      />
      <p>{w.capNote}</p>
      <label className="check">
        <input
          type="checkbox"
          checked={quietOn}
          disabled={!canWrite}
          onChange={(ev) => setQuietOn(ev.target.checked)}
        />
        {w.quietEnabled}
      </label>
      <TextField label={w.quietFrom} required pattern={time} value={from} readOnly={!canWrite} onChange={setFrom} />
      <TextField label={w.quietTo} required pattern={time} value={to} readOnly={!canWrite} onChange={setTo} />
      <p>{w.quietNote}</p>
    </SaveForm>
  )
}

/** The account's country: national phone numbers in imports and the contact form are read in it. */
function Country({ canWrite }: { canWrite: boolean }) {
  const w = useWords(words)
  const e = useWords(errors)
  const account = useQuery(accountQuery)
  return (
    <section aria-labelledby="country-title">
      <h2 id="country-title">{w.countryTitle}</h2>
      <PageError error={account.error} words={e} />
      {account.data && (
        <CountryForm key={JSON.stringify(account.data.account)} data={account.data.account} canWrite={canWrite} />
      )}
    </section>
  )
}

function CountryForm({
  data,
  canWrite,
}: {
  data: { country: string | null; country_set: boolean }
  canWrite: boolean
}) {
  const w = useWords(words)
  const queryClient = useQueryClient()
  const [country, setCountry] = useState(data.country_set ? (data.country ?? '') : '')
  const save = useMutation({
    mutationFn: () =>
      call(app.PATCH('/app/account', { body: { country: country.trim() === '' ? null : country.trim() } })),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: accountQuery.queryKey })
    },
  })
  return (
    <SaveForm save={save} canWrite={canWrite}>
      <p>{data.country ? fill(w.countryNow, { country: data.country }) : w.countryNone}</p>
      <TextField
        label={w.country}
        maxLength={2}
        pattern="[A-Za-z]{2}"
        value={country}
        readOnly={!canWrite}
        onChange={setCountry}
      />
    </SaveForm>
  )
}

/** A settings form: saves on submit, then says so or shows why not; a viewer sees it without the button. */
function SaveForm({
  save,
  canWrite,
  children,
}: {
  save: { mutate: () => void; error: unknown; isPending: boolean; isSuccess: boolean }
  canWrite: boolean
  children: ReactNode
}) {
  const w = useWords(words)
  const e = useWords(errors)
  return (
    <form onSubmit={handleSubmit(() => save.mutate())}>
      {children}
      <PageError error={save.error} words={e} />
      {save.isSuccess && <p role="status">{w.saved}</p>}
      {canWrite && (
        <button type="submit" disabled={save.isPending}>
          {w.save}
        </button>
      )}
    </form>
  )
}
