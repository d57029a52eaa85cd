package builtin

// The rules of the prompt-injection signal detector (issue 42): word sets, and patterns over
// the normalised token stream (injection_lex.go) with a weight each. A pattern of weight 1 is
// a match on its own; lighter ones are signals, and signals of different rules that fall
// within one window of the text add up to a match (injection_engine.go).
//
// Pattern syntax, one slot per field:
//
//	word|word      one of these words (normalised: lower case, no apostrophe or hyphen)
//	{SET}          a word of a set below; {A|B} of either; sets and words mix: {A}|word
//	:c             the punctuation mark c (:pipe is '|')
//	X*N            0 to N words of X; *N alone is 0 to N words of any kind
//	?X             X or nothing
//	^X             X must begin a line; !X the word must be written in capitals
//	$              the clause ends here: a mark, a line break or the end of the text follows,
//	               or a word of clauseWords
//
// Between words a comma, quotes, brackets and other soft marks are skipped; a sentence end
// ('.', '!', '?' or ';' before white space), a blank line, or 40 tokens end every pattern.
// Flags: need (a word of these sets must be part of the match), noNeg (not after a negation
// in the same clause: "never reveal your instructions"), noTo (not after "asks you to",
// "attempts to": "ignore all requests to ignore previous instructions"), noRep (not inside
// quotes reported by "like", "such as", "says": a defensive prompt quoting an attack).

var injSets = map[string]string{
	"IGN":   "ignore disregard forget override overrule bypass neglect circumvent overwrite",
	"IGNW":  "skip drop discard abandon dismiss erase delete clear reset cancel remove void nullify scrap ditch suspend disable lift",
	"IGNG":  "ignoring disregarding bypassing overriding circumventing violating breaking forgetting",
	"IGN3":  "ignores disregards bypasses overrides circumvents dismisses",
	"ALL":   "all any every each everything anything whatever",
	"Q":     "previous previously prior above earlier following preceding foregoing former initial original old existing current given default first aforementioned system safety core base preset programmed builtin developer developers openai openais ethical moral content hidden internal secret underlying standard usual normal predefined preprogrammed pre",
	"YOUR":  "your yours ur",
	"DET":   "the these those this that its their of and or to you have been were was received got told given so far before both just now please completely entirely totally simply rest remaining other such also literally kindly immediately instead one them set provided imposed placed put in by on from for with are is had came ve youve youre entire whole full",
	"OBJ":   "instructions instruction prompt prompts directions directives directive guidelines guideline guardrails programming conditioning preprompt systemprompt commands orders",
	"OBJW":  "rules rule constraints restrictions policies policy filters filter training safeguards limitations limits protocols protocol boundaries principles ethics morals values parameters context text input data info information content tasks task conversation prohibitions censorship identities identity persona personas",
	"NEG":   "not never no dont doesnt didnt cannot cant wont wouldnt shouldnt mustnt stop cease refuse refuses decline declines avoid nor neither nothing",
	"NEED":  "have has need needs must to longer any more anymore required obligated obliged supposed expected forced",
	"FOL":   "follow obey listen adhere comply abide heed respect honor honour observe stick",
	"R":     "reveal show print repeat output display leak dump tell give share expose disclose recite write paste copy list return provide spell echo type state divulge reproduce quote enumerate translate summarize summarise put read",
	"LOBJ":  "prompt prompts instructions instruction directives configuration config guidelines rules preprompt systemprompt initialization reasoning chainofthought programming",
	"G2":    "me us the your all any of entire full complete exact whole verbatim word each every top first last initial original system hidden secret internal previous above prior earlier step steps part parts piece copy version line lines sentence sentences words bit raw actual real underlying custom current starting three 3 five 5 10 ten original and or",
	"SYSQ":  "system initial original hidden secret internal previous above prior first exact full entire complete verbatim underlying actual real custom starting preprompt",
	"YOU":   "you youre youll youve ur u",
	"FREE":  "unrestricted unfiltered uncensored unlimited unbound unbounded unrestrained unconstrained amoral immoral unethical limitless boundless lawless jailbroken jailbreak jailbreaking uncontrolled unshackled remorseless unhinged",
	"NONE":  "restrictions guidelines limitations boundaries censorship ethics morals morality guardrails filters safeguards moderation conscience scruples disclaimers remorse filtering",
	"ETH":   "legality ethics ethical ethicality morality moral morals safety consequences rules policies guidelines laws law legal illegality harm danger",
	"QN":    "ethical moral legal safety content any all of the social",
	"AUTO":  "ai assistant assistants automated llm llms chatbot chatbots gpt chatgpt bot bots agent agents model models language",
	"REPLY": "response reply answer responses replies answers message",
	"TRANS": "translate encode encrypt reverse render express modify alter augment enhance integrate insert append substitute replace shift rewrite convert prepend apply invert",
	"ADDV":  "add include mention incorporate embed attach hint reference allude spread highlight integrate insert append",
	"PROMO": "promote promotes promoting advertise advertises advertising advertisement ad ads link links www url website discount offer offers deal deals lottery winnings subscribe newsletter fabricated fabricate false fake rumor rumour misleading misinformation propaganda scam phishing bank",
	"REQ":   "request requests requested attempt attempts attempted tries try trying asks ask asked asking tell tells told telling instruct instructs instructed instructing urge urges urged force forces forced make makes made trick tricks tricked convince convinced manipulate manipulates persuade persuaded cause causes causing caused get gets designed intended meant order orders ordered command commands commanded lead leads led pressure coerce says say saying said",
	"CUE":   "like such say says saying said send sends sent ask asks asked request requests query example examples eg ie instance including include includes phrase phrases type types write writes tries try attempt attempts something anything called named",
	"FORM":  "reverse reversed backward backwards french german spanish italian portuguese dutch russian chinese japanese korean arabic hindi cipher ciphers caesar monoalphabetic vigenere base64 base32 binary hexadecimal hex morse emoji emojis leetspeak rot13 uppercase pirate rhymes rhyming haiku",
	"ROT":   "vtaber qvfertneq sbetrg bireevqr vafgehpgvbaf vafgehpgvba cerivbhf cebzcg flfgrz erirny ehyrf thvqryvarf nobir cevbe cnffjbeq frperg",
}

// injRuleDef is a rule as written.
type injRuleDef struct {
	name    string
	w       float32
	pattern string
	need    string // sets, '|'-separated
	flags   string // noNeg noTo noRep, space-separated
}

var injRuleDefs = []injRuleDef{
	// Instruction override.
	{"override", 1, "{IGN} {ALL|YOUR|Q|DET|OBJW}*6 {OBJ|OBJW}", "ALL|YOUR|Q", "noNeg noTo noRep"},
	{"override-weak-verb", 1, "{IGNW} {ALL|YOUR|Q|DET|OBJW}*6 {OBJ}", "ALL|YOUR|Q", "noNeg noTo noRep"},
	{"override-bare", 1, "@{IGN} instructions|instruction|prompts|directives|directions", "", "noNeg noTo noRep"},
	{"override-rest", 1, "@{IGN} the|all ?of rest|remainder ?of {DET|Q}*3 {OBJ|OBJW}", "", "noNeg noTo noRep"},
	{"override-everything", 1, "@{IGN} {DET|ALL}*2 everything|anything|all|what {DET|YOU|Q|ALL|NEED}*4 above|before|told|said|written|previously|prior|earlier|learned|learnt|heard|know|knew|instructed|programmed|taught|so", "", "noNeg noTo noRep"},
	{"override-above", 1, "@{IGN} the|all|everything ?of ?the above|preceding|previous|foregoing|prior $", "", "noNeg noTo noRep"},
	{"override-gerund", 0.6, "@{IGNG} {ALL|YOUR|Q|DET}*5 {OBJ|OBJW}", "Q|YOUR", "noNeg noTo noRep"},
	{"do-not-follow", 1, "{NEG} {DET|NEED|FOL}*3 {FOL} {ALL|YOUR|Q|DET|OBJW}*5 {OBJ|OBJW}", "YOUR|Q", "noRep"},
	{"do-not-follow-weak", 0.5, "{NEG} {DET|NEED|FOL}*3 {FOL} {ALL|YOUR|Q|DET|OBJW}*5 {OBJ|OBJW}", "", "noRep"},
	{"new-instructions", 1, "new|updated|revised|real|actual|true|secret|hidden|override|overriding instructions|instruction|directive|directives|task|prompt|orders|objective|goal :colon", "", "noRep"},
	// "New rules:" also heads a linter's changelog entry ("new rules: `use-errors-new`"): a
	// signal, a match with any other cue.
	{"new-rules", 0.6, "new|updated|revised|real|actual|true|secret|hidden|override|overriding rules :colon", "", "noRep"},
	{"new-instructions-weak", 0.5, "important|additional|system|admin|urgent|priority @instructions|instruction|directive|directives|prompt :colon", "", "noRep"},
	{"your-new-task", 0.8, "your new|real|actual|true|only|next|sole|primary task|goal|objective|job|purpose|mission|instructions|role", "", "noRep"},
	{"stop-everything", 0.6, "stop|halt|cease everything", "", "noNeg noRep"},
	{"just-print", 0.4, "just|simply print|say|output|write|type|echo", "", "noNeg noRep"},
	{"set-by-openai", 0.5, "set|imposed|placed|laid|established|given|made ?out|forth|down ?by|on|upon ?you ?by ?your|its|their|the @openai|openais|anthropic|creators|developers|programmers|makers|owners", "", ""},
	{"rot13", 1, "{ROT} *3 {ROT}", "", ""},

	// Prompt leak.
	{"reveal-prompt", 1, "{R} ?me|us {G2}*6 {LOBJ} ?you ?were|have|had|ve|got|received ?been ?given|received|provided|told $", "YOUR|SYSQ", "noNeg noTo noRep"},
	{"reveal-your-prompt", 1, "{R} ?me|us {G2}*4 your {G2}*4 prompt|prompts|configuration|config|preprompt|systemprompt|initialization|chainofthought|reasoning", "", "noNeg noTo noRep"},
	{"what-is-your-prompt", 1, "what|whats|which {DET|G2|SYSQ}*6 your {SYSQ}*3 prompt|prompts|instructions|directives|rules|guidelines|configuration|preprompt|systemprompt $", "", "noNeg noTo noRep"},
	{"repeat-above", 1, "@repeat|print|output|recite|reproduce|echo|display|dump|reveal|copy|paste|translate|summarize|summarise|spell {ALL|DET}*3 everything|text|words|lines|content|messages|instructions|conversation|prompt {DET}*2 above|before|previously|earlier|prior", "", "noNeg noTo noRep"},
	{"verbatim-your-prompt", 1, "verbatim|word ?for ?word ?from|of|in your {SYSQ}*2 {LOBJ}", "", "noNeg noRep"},
	{"sentence-of-prompt", 1, "first|second|third|last|next|opening sentence|sentences|line|lines|words|paragraph|part of your {SYSQ}*2 prompt|instructions|preprompt|systemprompt", "", "noNeg noRep"},
	{"as-your-developer", 0.5, "as|im|i ?am your ?technical|lead @developer|creator|maintainer|admin|administrator|owner|programmer|engineer|designer|operator", "", "noRep"},

	// Jailbreak and persona.
	{"do-anything-now", 1, "do anything ?now|go now", "", "noRep"},
	{"dan-caps", 0.5, "!dan", "", "noRep"},
	{"mode-enabled", 1, "god|jailbreak|jailbroken|dan|evil|chaos|opposite|unrestricted|unfiltered|uncensored|amoral|anarchy|illegality mode enabled|activated|output|response|responses|engaged|unlocked", "", "noRep"},
	{"developer-mode-output", 1, "developer mode output|outputs|response|responses", "", "noRep"},
	{"mode-enable", 1, "simulate|enter|activate|emulate|stay|remain|switch|engage|be ?in|to|into ?the jailbreak|dan|god|unrestricted|unfiltered|uncensored|evil|opposite|chaos|anarchy mode", "", "noNeg noRep"},
	{"simulate-developer-mode", 1, "simulate|emulate|stay|remain ?in ?the developer mode", "", "noNeg noRep"},
	{"any-mode-enabled", 0.5, "mode enabled|activated|engaged|unlocked|output", "", "noRep"},
	{"developer-mode", 0.4, "@developer|jailbreak|dan|god mode", "", "noRep"},
	{"stay-in-character", 0.6, "stay|stays|remain|remains|keep|staying|remaining ?in|as ?a|the character", "", "noRep"},
	{"break-character", 0.5, "never|dont|not|no break|breaking|leave|drop|breaks character", "", "noRep"},
	{"never-refuse", 0.5, "never|wont|cannot|not|cant|doesnt @refuse|refuses|decline|declines|reject|rejects|deny|denies", "", "noRep"},
	{"no-restrictions", 0.5, "no|zero|without|free ?of|from ?any ?of ?the {QN}*3 {NONE}", "", "noRep"},
	{"has-no-ethics", 0.5, "has|have|with no {QN}*3 @ethics|morals|morality|ethical|moral|boundaries|limits|limitations|restrictions|filters|censorship|guidelines|principles|policies|rules", "", "noRep"},
	{"free-word", 0.4, "{FREE}", "", "noRep"},
	// A persona piled with such words: "amoral … unfiltered ai", "immoral, unethical".
	{"free-words", 0.4, "{FREE} *6 {FREE}", "", "noRep"},
	{"not-bound", 0.6, "not|never|longer|nor bound|restricted|limited|constrained|governed|confined|tied|held|burdened", "", "noRep"},
	{"broke-free", 0.6, "broken|break|broke|breaks|freed|free|escaped|released|liberated ?free ?of|from ?the|any|all|and|its|their|typical confines|restrictions|limitations|rules|shackles|chains|constraints|boundaries|prison|cage", "", "noRep"},
	{"content-policy", 0.5, "openai|openais|chatgpt|anthropic|content|safety|usage policy|policies|guidelines|filter|filters|moderation", "", "noRep"},
	{"regardless-ethics", 0.5, "regardless|irrespective|without ?of ?any ?{QN}*2 regard|regards|consideration|considerations|concern|concerns ?for|of|to {QN}*2 {ETH}", "", "noRep"},
	{"regardless-of-ethics", 0.5, "regardless|irrespective of {QN}*2 {ETH}", "", "noRep"},
	// Going against ethics, standards or the law, as a persona is told to ("violating all
	// ethical standards", "goes against the law", "contradicts your hardcoded rules").
	{"violate-ethics", 0.5, "violate|violates|violating|break|breaks|breaking|defy|defies|defying|contradict|contradicts|contradicting|against {ALL|DET|QN}*3 {ETH|NONE}|standards|norms|principles|values", "", "noNeg noTo noRep"},
	// Told to leave out warnings and disclaimers: "never include moral policing, warnings or
	// dangers", "without any disclaimers".
	{"no-warnings", 0.4, "{NEG}|without {DET|ALL|QN|ADDV}*4 warnings|disclaimers|caveats|moralizing|moralising|lectures|lecturing", "", "noRep"},
	// A persona described as setting rules and ethics aside: "DeltaGPT disregards all ethical
	// or legal concerns", "it ignores any guidelines".
	{"persona-ignores", 0.6, "{IGN3} {ALL|DET|QN}*4 {OBJ|OBJW|NONE}|concerns|considerations|implications", "", "noNeg noTo noRep"},
	// "no matter how immoral, unethical or illegal it is".
	{"no-matter-how", 0.5, "no matter how|what {FREE}|illegal|harmful|dangerous|offensive|inappropriate|explicit|unsafe", "", "noRep"},
	{"regardless-ethics2", 0.5, "regardless|irrespective ?of ?any {QN}*2 ethical|moral|legal considerations|concerns|implications|guidelines|standards", "", "noRep"},
	{"dont-care-ethics", 0.5, "dont|doesnt|not|never|no care|cares|caring|concern|fuck|shit|damn ?about|for {QN}*3 {ETH|NONE}", "", "noRep"},
	{"no-limits-ai", 0.6, "no limits|restrictions|rules|filter|filters|boundaries|morals|ethics ai|mode|gpt|bot|model", "", "noRep"},
	{"two-responses", 0.4, "two|2 *2 responses|answers|replies|paragraphs|outputs|manners|personas|personalities|entities|characters|models|ais|chatbots", "", "noRep"},
	{"one-normal-one", 0.4, "one @normal|censored|classic and one", "", "noRep"},
	{"not-an-ai", 0.4, "not|no|longer ?a|an|just ai|assistant|chatbot|bot|gpt|chatgpt|model|llm", "", "noRep"},
	{"not-a-language-model", 0.5, "not ?a|an language model", "", "noRep"},
	{"from-now-on", 0.5, "from @now on", "", "noRep"},
	{"act-as", 0.3, "act|acting|behave|roleplay|roleplaying|pose as|like", "", "noNeg noRep"},
	{"pretend", 0.3, "pretend|pretending|imagine ?to be|that|you", "", "noNeg noRep"},
	{"play-role", 0.3, "play|playing|assume|take|immerse ?yourself ?in|into the @role|persona of", "", "noNeg noRep"},
	{"you-are-now", 0.4, "{YOU} are|re|will|ll now ?going ?to ?be|act|play|become", "", "noRep"},
	{"you-are-about-to", 0.4, "{YOU} are|re about to simulate|immerse|become|be|act|play|pretend|roleplay", "", "noRep"},
	{"embody", 0.3, "embody|impersonate|personify|continue as|being", "", "noNeg noRep"},
	{"you-are-going-to-act", 0.4, "{YOU} are|re going to act|play|pretend|simulate|roleplay|become|immerse", "", "noRep"},
	{"you-will-act", 0.4, "{YOU} will|ll|must|shall act|play|pretend|simulate|roleplay|become|immerse", "", "noRep"},
	{"hello-chatgpt", 0.3, "^hello|hi|hey|dear chatgpt|gpt|bard|claude|gemini|llama", "", ""},
	{"sorry-quoted", 0.3, ":\" ?i im|apologize|apologise|sorry", "", ""},
	{"dollar-system", 0.6, ":$ system|sys|admin|developer|root", "", ""},

	// Instructions planted in documents and tool results, addressed to the model.
	{"note-to-ai", 1, "note|notice|instructions|instruction|attention|reminder|memo ?for|to ?the|any|all ?automated|ai {AUTO}*3 {AUTO}", "", "noRep"},
	{"if-you-are-ai", 0.8, "if|when you are|re ?an|a|the @{AUTO}", "", "noRep"},
	{"dear-ai", 0.6, "dear|hey|hi|hello ai|assistant|chatbot|llm|gpt|chatgpt|bot|model", "", "noRep"},
	{"ai-reading-this", 0.8, "{AUTO} ?reading|processing|summarizing|summarising|analyzing|analysing|parsing|reviewing this|these", "", "noRep"},
	// Instructions about "your response": an ordinary request in a user's prompt ("translate
	// your answer into French"), an injection inside a document. Alone they are signals; an
	// instruction to put a link, an advertisement or a falsehood into the reply is a match.
	{"transform-your-reply", 0.6, "{TRANS} *4 your {REPLY}", "", "noNeg noRep reply"},
	{"add-to-your-reply", 0.6, "{ADDV} *4 your {REPLY}", "", "noNeg noRep reply"},
	{"in-your-reply", 0.6, "in|within|into|to your {REPLY} {ADDV|TRANS}", "", "noNeg noRep reply"},
	{"reply-in", 0.6, "reply|respond|answer in|using|with reverse|base64|base32|base16|french|german|spanish|italian|portuguese|emojis|emoji|cipher|morse|binary|hex|leetspeak|rot13", "", "noRep reply"},
	{"your-reply-form", 0.6, "your {REPLY} *3 {FORM}", "", "noNeg noRep reply"},
	{"form-for-your-reply", 0.6, "{FORM} *8 for|to|in|on|of your {REPLY}", "", "noNeg noRep reply"},
	{"promote-in-your-reply", 1, "your {REPLY} *12 {PROMO}", "", "noNeg noRep"},
	{"promote-to-your-reply", 1, "{PROMO} *12 your {REPLY}", "", "noNeg noRep"},
	// Document context: an instruction about "your response" next to the marks of an email
	// or a tool result is addressed to the model reading it, not written by its user.
	// The marks are one group: however many there are, they weigh 0.4 together.
	{"email-header", 0.4, "^subject|emailfrom|email_from|sender|cc|bcc :colon", "", "doc"},
	{"email-salutation", 0.4, "^dear *2 :,", "", "doc"},
	{"email-signoff", 0.4, "^regards|sincerely|cheers|respectfully", "", "doc"},
	{"email-signoff2", 0.4, "^best|kind|warm regards|wishes", "", "doc"},
	{"email-footer", 0.4, "unsubscribe|unsubscribing", "", "doc"},
	{"email-privacy", 0.4, "privacy policy|notice|statement", "", "doc"},
	{"email-rights", 0.4, "all rights reserved", "", "doc"},
	{"email-receiving", 0.4, "you are|re receiving|getting this|these|notifications|emails|email", "", "doc"},
	{"email-sent-with", 0.4, "sent with care|love from", "", "doc"},
	{"email-reply-to-this", 0.4, "reply|respond to this email|message", "", "doc"},
	{"email-questions", 0.4, "if you have any questions|question|concerns", "", "doc"},
	{"email-browser", 0.4, "view ?this|it ?email|message|online in|on ?your|a|the browser", "", "doc"},
	{"do-not-evaluate", 0.6, "{NEG} @evaluate|assess|analyze|analyse|summarize|summarise|grade the|this candidate|resume|cv|document|email|text|applicant|application|content|data|article", "", "noRep"},
	{"simply-respond-with", 0.5, "simply|just @respond|reply|answer|output|print with|:colon|:\"", "", "noRep"},
	{"reply-only-following", 0.6, "reply|respond|answer|print|output|say ?with ?only ?the following", "", "noRep"},
	{"nothing-else", 0.2, "nothing else", "", "noRep"},
	{"may-not-deviate", 0.4, "may|must|will|should|do not|never deviate", "", "noRep"},

	// Fake role turns, delimiters and document ends.
	{"chatml", 1, ":< :pipe im_start|im_end|endoftext|eot_id|start_header_id|end_header_id|begin_of_text|system|assistant|user", "", ""},
	{"llama-sys", 1, ":< :< sys|inst :>", "", ""},
	// The labels a jailbreak makes the model put before its answers: "[🔓JAILBREAK]", "[DAN]:".
	{"bracket-jailbreak", 0.6, ":[ jailbreak|jailbroken|dan|antigpt|unfiltered|uncensored :]", "", "noRep"},
	{"bracket-role", 0.6, ":[ ?:/ system|inst|sys|admin|instructions|instruction|restofdocument|rest_of_document|endofdocument :]", "", ""},
	{"tag-role", 0.6, ":< ?:/ system|sys|instructions|instruction|admin|systemprompt|system_prompt :>", "", ""},
	{"hash-header", 0.5, "^:# :#*3 @system|instruction|instructions|response|admin|override", "", ""},
	{"role-line", 0.6, "^system|developer|admin|administrator|root :colon", "", ""},
	{"core-instruction", 0.6, "core|hidden|secret|new|updated|real|priority|override instruction|instructions|directive|directives|command|commands", "", ""},
	{"end-of-document", 0.5, "end of ?the @document|email|conversation|session|transcript|prompt|instructions|resume|article", "", ""},
}
