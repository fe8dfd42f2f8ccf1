package redact

// Credential shapes, the rules used at every level.
//
// Most rules are ported from gitleaks (https://github.com/gitleaks/gitleaks,
// config/gitleaks.toml at commit b58d3f10, rule ids kept), a subset chosen
// for being self-identifying: each starts with a documented prefix and is
// judged by the prefix, the character classes and lengths after it and
// gitleaks' Shannon-entropy threshold — never by the name of a variable.
// Left out: rules that need a keyword elsewhere in the text (the 101
// "semi-generic" provider-name rules, generic-api-key, airtable and
// sourcegraph PATs, facebook tokens), rules for paths (nuget, pkcs12,
// kubernetes, freemius), multi-line curl rules, and rules whose anchor is
// in the middle of the token (azure-ad-client-secret, hashicorp-tf,
// maxmind). Two patterns escape a '.' that gitleaks leaves as "any byte"
// (slack-webhook-url, slack-config-access-token). Rules marked cline-mcp
// are ours: provider key formats Cline
// users configure that gitleaks has no rule for.
//
// gitleaks is MIT licensed:
//
//	MIT License
//
//	Copyright (c) 2019 Zachary Rice
//
//	Permission is hereby granted, free of charge, to any person obtaining a copy
//	of this software and associated documentation files (the "Software"), to deal
//	in the Software without restriction, including without limitation the rights
//	to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
//	copies of the Software, and to permit persons to whom the Software is
//	furnished to do so, subject to the following conditions:
//
//	The above copyright notice and this permission notice shall be included in all
//	copies or substantial portions of the Software.
//
//	THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
//	IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
//	FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
//	AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
//	LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
//	OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
//	SOFTWARE.

// shapeRule is one credential format. The scanner looks for prefixes at the
// start of a word; the regexp (gitleaks' secret pattern, without its leading
// \b and its trailing terminator group) then decides, anchored there.
type shapeRule struct {
	id       string
	prefixes []string // literal starts of a match; fold: also in any case
	fold     bool
	re       string
	entropy  float64 // minimum Shannon entropy (bits per byte) of the match
	// term: gitleaks requires a terminator after the match: a quote or
	// backtick, white space, ';', a backslash escape ("\n", \") or the end
	// (we also take a '.' that ends a sentence). Without term, a longer run
	// of token characters is redacted whole.
	term bool
	// need: character kinds the part after the prefix must contain, for
	// rules whose shape an identifier can take ("s." + 24 letters is also
	// s.onceSetNextProtoDefaults).
	need need
}

type need uint8 // character kinds, see shapeRule.need

const (
	needDigit need = 1 << iota
	needUpper
	needLower
	needLetter
)

var shapeRules = []shapeRule{
	{id: "1password-secret-key", prefixes: []string{"A3-"}, re: `A3-[A-Z0-9]{6}-(?:(?:[A-Z0-9]{11})|(?:[A-Z0-9]{6}-[A-Z0-9]{5}))-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}`, entropy: 3.8, term: true},
	{id: "1password-service-account-token", prefixes: []string{"ops_eyJ"}, re: `ops_eyJ[a-zA-Z0-9+/]{250,}={0,3}`, entropy: 4},
	{id: "adobe-client-secret", prefixes: []string{"p8e-"}, re: `p8e-(?i)[a-z0-9]{32}`, entropy: 2, term: true},
	{id: "age-secret-key", prefixes: []string{"AGE-SECRET-KEY-1"}, re: `AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}`},
	{id: "alibaba-access-key-id", prefixes: []string{"LTAI"}, re: `LTAI(?i)[a-z0-9]{20}`, entropy: 2, term: true},
	{id: "anthropic-admin-api-key", prefixes: []string{"sk-ant-admin01-"}, re: `sk-ant-admin01-[a-zA-Z0-9_\-]{93}AA`, term: true},
	{id: "anthropic-api-key", prefixes: []string{"sk-ant-api03-"}, re: `sk-ant-api03-[a-zA-Z0-9_\-]{93}AA`, term: true},
	{id: "artifactory-api-key", prefixes: []string{"AKCp"}, re: `AKCp[A-Za-z0-9]{69}`, entropy: 4.5, term: true},
	{id: "artifactory-reference-token", prefixes: []string{"cmVmd"}, re: `cmVmd[A-Za-z0-9]{59}`, entropy: 4.5, term: true},
	{id: "authress-service-client-access-key", prefixes: []string{"sc_", "ext_", "scauth_", "authress_"}, re: `(?:sc|ext|scauth|authress)_(?i)[a-z0-9]{5,30}\.[a-z0-9]{4,6}\.(?-i:acc)[_-][a-z0-9-]{10,32}\.[a-z0-9+/_=-]{30,120}`, entropy: 2, term: true},
	{id: "aws-access-token", prefixes: []string{"A3T", "AKIA", "ASIA", "ABIA", "ACCA"}, re: `(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}`, entropy: 3, term: true},
	{id: "aws-amazon-bedrock-api-key-long-lived", prefixes: []string{"ABSK"}, re: `ABSK[A-Za-z0-9+/]{109,269}={0,2}`, entropy: 3, term: true},
	{id: "aws-amazon-bedrock-api-key-short-lived", prefixes: []string{"bedrock-api-key-"}, re: `bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29t[A-Za-z0-9+/=_-]*`, entropy: 3},
	{id: "clickhouse-cloud-api-secret-key", prefixes: []string{"4b1d"}, re: `4b1d[A-Za-z0-9]{38}`, entropy: 3, term: true},
	{id: "clojars-api-token", prefixes: []string{"CLOJARS_"}, fold: true, re: `(?i)CLOJARS_[a-z0-9]{60}`, entropy: 2},
	{id: "cloudflare-origin-ca-key", prefixes: []string{"v1.0-"}, re: `v1\.0-[a-f0-9]{24}-[a-f0-9]{146}`, entropy: 2, term: true},
	{id: "databricks-api-token", prefixes: []string{"dapi"}, re: `dapi[a-f0-9]{32}(?:-\d)?`, entropy: 3, term: true},
	{id: "digitalocean-access-token", prefixes: []string{"doo_v1_"}, re: `doo_v1_[a-f0-9]{64}`, entropy: 3, term: true},
	{id: "digitalocean-pat", prefixes: []string{"dop_v1_"}, re: `dop_v1_[a-f0-9]{64}`, entropy: 3, term: true},
	{id: "digitalocean-refresh-token", prefixes: []string{"dor_v1_"}, fold: true, re: `(?i)dor_v1_[a-f0-9]{64}`, term: true},
	{id: "doppler-api-token", prefixes: []string{"dp.pt."}, re: `dp\.pt\.(?i)[a-z0-9]{43}`, entropy: 2},
	{id: "duffel-api-token", prefixes: []string{"duffel_"}, re: `duffel_(?:test|live)_(?i)[a-z0-9_\-=]{43}`, entropy: 2},
	{id: "dynatrace-api-token", prefixes: []string{"dt0c01."}, re: `dt0c01\.(?i)[a-z0-9]{24}\.[a-z0-9]{64}`, entropy: 4},
	{id: "easypost-api-token", prefixes: []string{"EZAK"}, re: `EZAK(?i)[a-z0-9]{54}`, entropy: 2, term: true},
	{id: "easypost-test-api-token", prefixes: []string{"EZTK"}, re: `EZTK(?i)[a-z0-9]{54}`, entropy: 2, term: true},
	{id: "facebook-page-access-token", prefixes: []string{"EAAM", "EAAC"}, re: `EAA[MC](?i)[a-z0-9]{100,}`, entropy: 4, term: true},
	{id: "flutterwave-encryption-key", prefixes: []string{"FLWSECK_TEST-"}, re: `FLWSECK_TEST-(?i)[a-h0-9]{12}`, entropy: 2},
	{id: "flutterwave-public-key", prefixes: []string{"FLWPUBK_TEST-"}, re: `FLWPUBK_TEST-(?i)[a-h0-9]{32}-X`, entropy: 2},
	{id: "flutterwave-secret-key", prefixes: []string{"FLWSECK_TEST-"}, re: `FLWSECK_TEST-(?i)[a-h0-9]{32}-X`, entropy: 2},
	{id: "flyio-access-token", prefixes: []string{"fo1_", "fm1a_", "fm1r_", "fm2_"}, re: `(?:fo1_[\w-]{43}|fm1[ar]_[a-zA-Z0-9+\/]{100,}={0,3}|fm2_[a-zA-Z0-9+\/]{100,}={0,3})`, entropy: 4, term: true},
	{id: "frameio-api-token", prefixes: []string{"fio-u-"}, re: `fio-u-(?i)[a-z0-9\-_=]{64}`},
	{id: "gcp-api-key", prefixes: []string{"AIza"}, re: `AIza[\w-]{35}`, entropy: 4, term: true},
	{id: "github-app-token", prefixes: []string{"ghu_", "ghs_"}, re: `(?:ghu|ghs)_[0-9a-zA-Z]{36}`, entropy: 3},
	{id: "github-fine-grained-pat", prefixes: []string{"github_pat_"}, re: `github_pat_\w{82}`, entropy: 3},
	{id: "github-oauth", prefixes: []string{"gho_"}, re: `gho_[0-9a-zA-Z]{36}`, entropy: 3},
	{id: "github-pat", prefixes: []string{"ghp_"}, re: `ghp_[0-9a-zA-Z]{36}`, entropy: 3},
	{id: "github-refresh-token", prefixes: []string{"ghr_"}, re: `ghr_[0-9a-zA-Z]{36}`, entropy: 3},
	{id: "gitlab-cicd-job-token", prefixes: []string{"glcbt-"}, re: `glcbt-[0-9a-zA-Z]{1,5}_[0-9a-zA-Z_-]{20}`, entropy: 3},
	{id: "gitlab-deploy-token", prefixes: []string{"gldt-"}, re: `gldt-[0-9a-zA-Z_\-]{20}`, entropy: 3},
	{id: "gitlab-feature-flag-client-token", prefixes: []string{"glffct-"}, re: `glffct-[0-9a-zA-Z_\-]{20}`, entropy: 3},
	{id: "gitlab-feed-token", prefixes: []string{"glft-"}, re: `glft-[0-9a-zA-Z_\-]{20}`, entropy: 3},
	{id: "gitlab-incoming-mail-token", prefixes: []string{"glimt-"}, re: `glimt-[0-9a-zA-Z_\-]{25}`, entropy: 3},
	{id: "gitlab-kubernetes-agent-token", prefixes: []string{"glagent-"}, re: `glagent-[0-9a-zA-Z_\-]{50}`, entropy: 3},
	{id: "gitlab-oauth-app-secret", prefixes: []string{"gloas-"}, re: `gloas-[0-9a-zA-Z_\-]{64}`, entropy: 3},
	{id: "gitlab-pat-routable", prefixes: []string{"glpat-"}, re: `glpat-[0-9a-zA-Z_-]{27,300}\.[0-9a-z]{2}[0-9a-z]{7}`, entropy: 4, term: true},
	{id: "gitlab-pat", prefixes: []string{"glpat-"}, re: `glpat-[\w-]{20}`, entropy: 3},
	{id: "gitlab-ptt", prefixes: []string{"glptt-"}, re: `glptt-[0-9a-f]{40}`, entropy: 3},
	{id: "gitlab-rrt", prefixes: []string{"GR1348941"}, re: `GR1348941[\w-]{20}`, entropy: 3},
	{id: "gitlab-runner-authentication-token-routable", prefixes: []string{"glrt-t"}, re: `glrt-t\d_[0-9a-zA-Z_\-]{27,300}\.[0-9a-z]{2}[0-9a-z]{7}`, entropy: 4, term: true},
	{id: "gitlab-runner-authentication-token", prefixes: []string{"glrt-"}, re: `glrt-[0-9a-zA-Z_\-]{20}`, entropy: 3},
	{id: "gitlab-scim-token", prefixes: []string{"glsoat-"}, re: `glsoat-[0-9a-zA-Z_\-]{20}`, entropy: 3},
	{id: "gitlab-session-cookie", prefixes: []string{"_gitlab_session="}, re: `_gitlab_session=[0-9a-z]{32}`, entropy: 3},
	{id: "grafana-api-key", prefixes: []string{"eyJrIjoi"}, fold: true, re: `(?i)eyJrIjoi[A-Za-z0-9]{70,400}={0,3}`, entropy: 3, term: true},
	{id: "grafana-cloud-api-token", prefixes: []string{"glc_"}, fold: true, re: `(?i)glc_[A-Za-z0-9+/]{32,400}={0,3}`, entropy: 3, term: true},
	{id: "grafana-service-account-token", prefixes: []string{"glsa_"}, fold: true, re: `(?i)glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}`, entropy: 3, term: true},
	{id: "harness-api-key", prefixes: []string{"pat.", "sat."}, re: `(?:pat|sat)\.[a-zA-Z0-9_-]{22}\.[a-zA-Z0-9]{24}\.[a-zA-Z0-9]{20}`},
	{id: "heroku-api-key-v2", prefixes: []string{"HRKU-AA"}, re: `HRKU-AA[0-9a-zA-Z_-]{58}`, entropy: 4, term: true},
	{id: "huggingface-access-token", prefixes: []string{"hf_"}, re: `hf_(?i:[a-z]{34})`, entropy: 2, term: true},
	{id: "huggingface-organization-api-token", prefixes: []string{"api_org_"}, re: `api_org_(?i:[a-z]{34})`, entropy: 2, term: true},
	{id: "infracost-api-token", prefixes: []string{"ico-"}, re: `ico-[a-zA-Z0-9]{32}`, entropy: 3, term: true},
	{id: "intra42-client-secret", prefixes: []string{"s-s4t2"}, re: `s-s4t2(?:ud|af)-(?i)[abcdef0123456789]{64}`, entropy: 3, term: true},
	{id: "linear-api-key", prefixes: []string{"lin_api_"}, re: `lin_api_(?i)[a-z0-9]{40}`, entropy: 2},
	{id: "notion-api-token", prefixes: []string{"ntn_"}, re: `ntn_[0-9]{11}[A-Za-z0-9]{32}[A-Za-z0-9]{3}`, entropy: 4, term: true},
	{id: "npm-access-token", prefixes: []string{"npm_"}, fold: true, re: `(?i)npm_[a-z0-9]{36}`, entropy: 2, term: true},
	{id: "octopus-deploy-api-key", prefixes: []string{"API-"}, re: `API-[A-Z0-9]{26}`, entropy: 3, term: true},
	{id: "openai-api-key", prefixes: []string{"sk-"}, re: `(?:sk-(?:proj|svcacct|admin)-(?:[A-Za-z0-9_-]{74}|[A-Za-z0-9_-]{58})T3BlbkFJ(?:[A-Za-z0-9_-]{74}|[A-Za-z0-9_-]{58})|sk-[a-zA-Z0-9]{20}T3BlbkFJ[a-zA-Z0-9]{20})`, entropy: 3, term: true},
	{id: "openshift-user-token", prefixes: []string{"sha256~"}, re: `sha256~[\w-]{43}`, entropy: 3.5, term: true},
	{id: "perplexity-api-key", prefixes: []string{"pplx-"}, re: `pplx-[a-zA-Z0-9]{48}`, entropy: 4, term: true},
	{id: "planetscale-api-token", prefixes: []string{"pscale_tkn_"}, re: `pscale_tkn_(?i)[\w=\.-]{32,64}`, entropy: 3, term: true},
	{id: "planetscale-oauth-token", prefixes: []string{"pscale_oauth_"}, re: `pscale_oauth_[\w=\.-]{32,64}`, entropy: 3, term: true},
	{id: "planetscale-password", prefixes: []string{"pscale_pw_"}, fold: true, re: `(?i)pscale_pw_(?i)[\w=\.-]{32,64}`, entropy: 3, term: true},
	{id: "postman-api-token", prefixes: []string{"PMAK-"}, re: `PMAK-(?i)[a-f0-9]{24}\-[a-f0-9]{34}`, entropy: 3, term: true},
	{id: "prefect-api-token", prefixes: []string{"pnu_"}, re: `pnu_[a-zA-Z0-9]{36}`, entropy: 2, term: true},
	{id: "pulumi-api-token", prefixes: []string{"pul-"}, re: `pul-[a-f0-9]{40}`, entropy: 2, term: true},
	{id: "pypi-upload-token", prefixes: []string{"pypi-AgEIcHlwaS5vcmc"}, re: `pypi-AgEIcHlwaS5vcmc[\w-]{50,1000}`, entropy: 3},
	{id: "readme-api-token", prefixes: []string{"rdme_"}, re: `rdme_[a-z0-9]{70}`, entropy: 2, term: true},
	{id: "rubygems-api-token", prefixes: []string{"rubygems_"}, re: `rubygems_[a-f0-9]{48}`, entropy: 2, term: true},
	{id: "scalingo-api-token", prefixes: []string{"tk-us-"}, re: `tk-us-[\w-]{48}`, entropy: 2, term: true},
	{id: "sendgrid-api-token", prefixes: []string{"SG."}, re: `SG\.(?i)[a-z0-9=_\-\.]{66}`, entropy: 2, term: true},
	{id: "sendinblue-api-token", prefixes: []string{"xkeysib-"}, re: `xkeysib-[a-f0-9]{64}\-(?i)[a-z0-9]{16}`, entropy: 2, term: true},
	{id: "sentry-org-token", prefixes: []string{"sntrys_eyJpYXQiO"}, re: `sntrys_eyJpYXQiO[a-zA-Z0-9+/]{10,200}(?:LCJyZWdpb25fdXJs|InJlZ2lvbl91cmwi|cmVnaW9uX3VybCI6)[a-zA-Z0-9+/]{10,200}={0,2}_[a-zA-Z0-9+/]{43}`, entropy: 4.5, term: true},
	{id: "sentry-user-token", prefixes: []string{"sntryu_"}, re: `sntryu_[a-f0-9]{64}`, entropy: 3.5, term: true},
	{id: "settlemint-application-access-token", prefixes: []string{"sm_aat_"}, re: `sm_aat_[a-zA-Z0-9]{16}`, entropy: 3, term: true},
	{id: "settlemint-personal-access-token", prefixes: []string{"sm_pat_"}, re: `sm_pat_[a-zA-Z0-9]{16}`, entropy: 3, term: true},
	{id: "settlemint-service-access-token", prefixes: []string{"sm_sat_"}, re: `sm_sat_[a-zA-Z0-9]{16}`, entropy: 3, term: true},
	{id: "shippo-api-token", prefixes: []string{"shippo_"}, re: `shippo_(?:live|test)_[a-fA-F0-9]{40}`, entropy: 2, term: true},
	{id: "shopify-access-token", prefixes: []string{"shpat_"}, re: `shpat_[a-fA-F0-9]{32}`, entropy: 2},
	{id: "shopify-custom-access-token", prefixes: []string{"shpca_"}, re: `shpca_[a-fA-F0-9]{32}`, entropy: 2},
	{id: "shopify-private-app-access-token", prefixes: []string{"shppa_"}, re: `shppa_[a-fA-F0-9]{32}`, entropy: 2},
	{id: "shopify-shared-secret", prefixes: []string{"shpss_"}, re: `shpss_[a-fA-F0-9]{32}`, entropy: 2},
	{id: "slack-app-token", prefixes: []string{"xapp-"}, fold: true, re: `(?i)xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+`, entropy: 2},
	{id: "slack-bot-token", prefixes: []string{"xoxb-"}, re: `xoxb-[0-9]{10,13}-[0-9]{10,13}[a-zA-Z0-9-]*`, entropy: 3},
	{id: "slack-config-access-token", prefixes: []string{"xoxe.xox"}, fold: true, re: `(?i)xoxe\.xox[bp]-\d-[A-Z0-9]{163,166}`, entropy: 2},
	{id: "slack-config-refresh-token", prefixes: []string{"xoxe-"}, fold: true, re: `(?i)xoxe-\d-[A-Z0-9]{146}`, entropy: 2},
	{id: "slack-legacy-bot-token", prefixes: []string{"xoxb-"}, re: `xoxb-[0-9]{8,14}-[a-zA-Z0-9]{18,26}`, entropy: 2},
	{id: "slack-legacy-token", prefixes: []string{"xoxo-", "xoxs-"}, re: `xox[os]-\d+-\d+-\d+-[a-fA-F\d]+`, entropy: 2},
	{id: "slack-legacy-workspace-token", prefixes: []string{"xoxa-", "xoxr-"}, re: `xox[ar]-(?:\d-)?[0-9a-zA-Z]{8,48}`, entropy: 2},
	{id: "slack-user-token", prefixes: []string{"xoxp-", "xoxe-"}, re: `xox[pe](?:-[0-9]{10,13}){3}-[a-zA-Z0-9-]{28,34}`, entropy: 2},
	{id: "slack-webhook-url", prefixes: []string{"hooks.slack.com/"}, re: `hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{43,56}`},
	{id: "square-access-token", prefixes: []string{"EAAA", "sq0atp-"}, re: `(?:EAAA|sq0atp-)[\w-]{22,60}`, entropy: 2, term: true},
	{id: "stripe-access-token", prefixes: []string{"sk_", "rk_"}, re: `(?:sk|rk)_(?:test|live|prod)_[a-zA-Z0-9]{10,99}`, entropy: 2, term: true},
	{id: "twilio-api-key", prefixes: []string{"SK"}, re: `SK[0-9a-fA-F]{32}`, entropy: 3},
	{id: "vault-batch-token", prefixes: []string{"hvb."}, re: `hvb\.[\w-]{138,300}`, entropy: 4, term: true},
	{id: "vault-service-token", prefixes: []string{"hvs."}, re: `hvs\.[\w-]{90,120}`, entropy: 3.5, term: true},
	// gitleaks' vault-service-token also takes the legacy "s." form; we
	// require it to look generated (digits and both cases).
	{id: "vault-service-token", prefixes: []string{"s."}, re: `s\.(?i:[a-z0-9]{24})`, entropy: 3.5, term: true, need: needDigit | needUpper | needLower},

	// Provider key formats gitleaks has no rule for (or a stricter one than
	// these keys follow): OpenAI-compatible providers (DeepSeek, OpenRouter
	// sk-or-v1-, Moonshot, ...), NVIDIA, Google OAuth, Groq, xAI,
	// Replicate, Hugging Face with digits.
	{id: "cline-mcp-sk-key", prefixes: []string{"sk-"}, re: `sk-[A-Za-z0-9_-]{20,}`, entropy: 3.5, need: needDigit | needLetter},
	{id: "cline-mcp-nvidia-key", prefixes: []string{"nvapi-"}, re: `nvapi-[A-Za-z0-9_-]{20,}`, entropy: 3, need: needDigit | needLetter},
	{id: "cline-mcp-google-oauth", prefixes: []string{"ya29."}, re: `ya29\.[A-Za-z0-9_.-]{20,}`, entropy: 3, need: needDigit | needLetter},
	{id: "cline-mcp-groq-key", prefixes: []string{"gsk_"}, re: `gsk_[A-Za-z0-9]{20,}`, entropy: 3, need: needDigit | needLetter},
	{id: "cline-mcp-xai-key", prefixes: []string{"xai-"}, re: `xai-[A-Za-z0-9]{20,}`, entropy: 3, need: needDigit | needLetter},
	{id: "cline-mcp-replicate-key", prefixes: []string{"r8_"}, re: `r8_[A-Za-z0-9]{20,}`, entropy: 3, need: needDigit | needLetter},
	{id: "cline-mcp-huggingface-key", prefixes: []string{"hf_"}, re: `hf_[A-Za-z0-9]{30,}`, entropy: 3, need: needDigit | needLetter},
}
