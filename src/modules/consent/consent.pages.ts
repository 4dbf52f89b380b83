import { escapeHtml as e } from './consent.rules.ts'

// Server-rendered pages of the consent flows: plain HTML forms, no script; every dynamic value escaped.

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${e(title)}</title>
<style>
body{font-family:system-ui,sans-serif;max-width:34rem;margin:2rem auto;padding:0 1rem;line-height:1.5;color:#222}
label{display:block;margin-top:1rem;font-weight:600}
input[type=text],input[type=tel],input[type=email]{width:100%;padding:.5rem;font-size:1rem;box-sizing:border-box}
.consent{display:flex;gap:.5rem;font-weight:normal}
button{margin-top:1.5rem;padding:.6rem 1.2rem;font-size:1rem}
.error{background:#fde8e8;border:1px solid #e0a0a0;padding:.75rem;margin-top:1rem}
</style>
</head>
<body>
${body}
</body>
</html>
`
}

export interface SignupPageInput {
  accountName: string
  action: string
  formToken: string
  consentText: string
  /** the account's logo (a media library image), shown above the name */
  logoUrl?: string | null
  values: { name: string; phone: string; email: string; consent: boolean }
  error?: string
}

export function signupPage(input: SignupPageInput): string {
  const v = input.values
  return page(
    `Sign up: ${input.accountName}`,
    `${input.logoUrl ? `<img class="logo" src="${e(input.logoUrl)}" alt="${e(input.accountName)}" height="64">\n` : ''}<h1>${e(input.accountName)}</h1>
<p>Sign up for our messages.</p>
${input.error ? `<p class="error" role="alert" id="error">${e(input.error)}</p>` : ''}
<form method="post" action="${e(input.action)}" id="signup">
<input type="hidden" name="form_token" value="${e(input.formToken)}">
<label for="name">Name</label>
<input type="text" id="name" name="name" maxlength="120" autocomplete="name" value="${e(v.name)}">
<label for="phone">Mobile number (WhatsApp)</label>
<input type="tel" id="phone" name="phone" maxlength="40" autocomplete="tel" placeholder="+49 151 23456789" value="${e(v.phone)}">
<label for="email">E-mail</label>
<input type="email" id="email" name="email" maxlength="254" autocomplete="email" value="${e(v.email)}">
<label class="consent"><input type="checkbox" id="consent" name="consent" value="yes"${v.consent ? ' checked' : ''}> <span>${e(input.consentText)}</span></label>
<button type="submit">Sign up</button>
</form>`,
  )
}

/**
 * After a sign-up: the same page for a new, a pending and a confirmed address (it tells nothing about who signed up
 * before); it depends only on which addresses the form gave.
 */
export function signupDonePage(input: { accountName: string; chat: boolean; email: boolean }): string {
  const steps = [
    input.chat ? '<li>We sent you a WhatsApp message: tap its confirm button.</li>' : '',
    input.email ? '<li>We sent you an e-mail: open its confirmation link.</li>' : '',
  ].join('')
  return page(
    'Almost done',
    `<h1 id="done">Almost done</h1>
<p>Thank you for signing up with ${e(input.accountName)}.</p>
<p>Please check your messages and confirm your sign-up:</p><ul>${steps}</ul>
<p>If you have confirmed before, there is nothing more to do and we sent you nothing new.</p>`,
  )
}

export function messagePage(title: string, text: string): string {
  return page(title, `<h1>${e(title)}</h1>\n<p>${e(text)}</p>`)
}

export function confirmEmailPage(action: string): string {
  return page(
    'Confirm your e-mail address',
    `<h1>Confirm your e-mail address</h1>
<p>Please confirm that you want to receive our e-mails.</p>
<form method="post" action="${e(action)}"><button type="submit" id="confirm">Confirm</button></form>`,
  )
}

export function unsubscribePage(action: string): string {
  return page(
    'Unsubscribe',
    `<h1>Unsubscribe</h1>
<p>Do you want to stop receiving our e-mails?</p>
<form method="post" action="${e(action)}"><button type="submit" id="unsubscribe">Unsubscribe</button></form>`,
  )
}
